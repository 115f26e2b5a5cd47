package execution_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/steward-run/steward/pkg/action"
	"github.com/steward-run/steward/pkg/event"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/stewardtest"
	"github.com/steward-run/steward/pkg/task"
	"github.com/steward-run/steward/services/execution"
	"github.com/steward-run/steward/services/execution/breaker"
	"github.com/steward-run/steward/services/governance"
	"github.com/steward-run/steward/services/governance/policy"
)

// governedBed is a bed with the real governance plane on the same bus,
// deciding with real OPA from a policy directory the test may rewrite:
// the two planes meet only on the log, as they do in a deployment.
type governedBed struct {
	*bed
	engine *policy.Engine
	bundle string // the policy file
	rego   []byte // the default bundle it starts as
}

func newGovernedBed(t *testing.T) *governedBed {
	t.Helper()
	g := openGovernedBed(t)
	g.startGovernance()
	g.start()
	return g
}

// openGovernedBed is newGovernedBed with neither plane started.
func openGovernedBed(t *testing.T) *governedBed {
	t.Helper()
	ctx := context.Background()
	b := openBed(t, breaker.Config{})
	rego, err := os.ReadFile("../governance/policy/default/steward.rego")
	if err != nil {
		t.Fatal(err)
	}
	bundle := filepath.Join(t.TempDir(), "steward.rego")
	if err := os.WriteFile(bundle, rego, 0o600); err != nil {
		t.Fatal(err)
	}
	engine, err := policy.Load(ctx, filepath.Dir(bundle))
	if err != nil {
		t.Fatal(err)
	}
	return &governedBed{bed: b, engine: engine, bundle: bundle, rego: rego}
}

// startGovernance starts a governance plane on the bed's log; stop it with
// Stop (it is also stopped when the test ends).
func (g *governedBed) startGovernance() *governance.Plane {
	g.t.Helper()
	logger := slog.New(slog.NewTextHandler(testWriter{g.t}, nil))
	p := governance.New(g.log, logger, governance.Config{Engine: g.engine, Tools: g.cfg.Tools, Requests: g.requests})
	if err := p.Start(context.Background()); err != nil {
		g.t.Fatal(err)
	}
	g.t.Cleanup(p.Stop)
	return p
}

// addPolicy puts rules after the default bundle and reloads it now.
func (g *governedBed) addPolicy(rules string) {
	g.t.Helper()
	if err := os.WriteFile(g.bundle, append(append([]byte{}, g.rego...), "\n"+rules+"\n"...), 0o600); err != nil {
		g.t.Fatal(err)
	}
	if changed, err := g.engine.Reload(context.Background()); err != nil || !changed {
		g.t.Fatalf("reload: changed %v, %v", changed, err)
	}
}

// propose opens a running task and proposes one action for tool, for
// governance to decide; it returns the task and action ids.
func (g *governedBed) propose(taskID, tool, target string) (string, string) {
	g.t.Helper()
	canonical, err := action.Canonical(action.Request{TaskID: taskID, Tool: tool, ToolVersion: "1", Target: target, Params: []byte(`{}`)})
	if err != nil {
		g.t.Fatal(err)
	}
	ref, reqHash, err := g.requests.Put(context.Background(), canonical)
	if err != nil {
		g.t.Fatal(err)
	}
	actionID := action.ID(taskID, "p1")
	g.append(taskID, &stewardv1.TaskCreated{Contract: &stewardv1.TaskContract{TaskId: taskID, Intent: "test", AllowedTools: []string{tool}}})
	g.append(taskID, &stewardv1.TaskStarted{})
	g.append(taskID, &stewardv1.ActionProposed{Action: &stewardv1.Action{
		ActionId: actionID, ProposalId: "p1", Tool: tool, ToolVersion: "1", Target: target,
		EffectClass: stewardv1.EffectClass_EFFECT_CLASS_IDEMPOTENT_WRITE, ProposedBy: "agent",
		RequestRef: ref, RequestHash: reqHash, ActionHash: action.Hash(actionID, reqHash), OpKey: action.OpKey(taskID, actionID),
	}})
	return taskID, actionID
}

// history returns the task's events.
func (g *governedBed) history(taskID string) []*stewardv1.EventRecord {
	g.t.Helper()
	recs, err := g.log.Read(context.Background(), taskID)
	if err != nil {
		g.t.Fatal(err)
	}
	return recs
}

// held registers an idempotent write that honours its key (allowed by the
// default policy) whose first call is held until the test releases it and
// then answers 503.
func (g *governedBed) held(script ...string) *scriptedTool {
	ts := startScriptedTool(g.t, append([]string{"hold-503"}, script...)...)
	g.register(ts, "charge", false, func(c *stewardv1.ToolContract) { c.Timeout = durationpb.New(30 * time.Second) })
	return ts
}

// TestARetryIsRevalidatedUnderANewPermit: a transient failure's retry is
// not made under the permit the first attempt used. Governance evaluates
// the action again (a new snapshot), issues a new permit, and attempt 2
// goes out under it with the same op_key.
func TestARetryIsRevalidatedUnderANewPermit(t *testing.T) {
	g := newGovernedBed(t)
	ts := g.held("ok")
	taskID, actionID := g.propose("t-reval-retry", "charge", "card-1")
	first := g.waitAction(taskID, actionID, status(stewardv1.ActionStatus_ACTION_STATUS_DISPATCHED))
	stewardtest.Eventually(t, 30*time.Second, func() (bool, string) { return ts.callCount() == 1, fmt.Sprintf("%d calls", ts.callCount()) })
	close(ts.release)
	a := g.waitAction(taskID, actionID, status(succeededS))

	if a.Attempt != 2 || ts.callCount() != 2 || len(ts.keys) != 1 || ts.keys[0] != a.OpKey {
		t.Fatalf("attempt %d, %d calls under keys %v; want 2 calls, both with op_key %s", a.Attempt, ts.callCount(), ts.keys, a.OpKey)
	}
	if a.Permit.PermitId == first.Permit.PermitId || a.Snapshot.SnapshotId == first.Snapshot.SnapshotId {
		t.Fatalf("permit %s, snapshot %s: want both new after the revalidation", a.Permit.PermitId, a.Snapshot.SnapshotId)
	}
	if a.Permit.ExpiresAt == nil || !a.Permit.ExpiresAt.AsTime().After(a.Permit.IssuedAt.AsTime()) {
		t.Errorf("permit %v has no expiry after its issue", a.Permit)
	}
	var dispatches []string
	var revalidated *stewardv1.ActionRevalidating
	for _, r := range g.history(taskID) {
		if d := r.Event.GetActionDispatched(); d != nil {
			dispatches = append(dispatches, d.PermitId)
		}
		if rv := r.Event.GetActionRevalidating(); rv != nil {
			revalidated = rv
		}
	}
	if len(dispatches) != 2 || dispatches[0] != first.Permit.PermitId || dispatches[1] != a.Permit.PermitId {
		t.Errorf("dispatches under permits %v; want one under each of %s, %s", dispatches, first.Permit.PermitId, a.Permit.PermitId)
	}
	if revalidated.GetReason() != stewardv1.RevalidationReason_REVALIDATION_REASON_RETRY || revalidated.PermitId != first.Permit.PermitId {
		t.Errorf("revalidation %v; want a retry of the first permit", revalidated)
	}
}

// TestARetryThatPolicyNowDeniesIsNotMade: the policy changes while the
// first attempt is out; the retry's revalidation takes a new snapshot
// under the new bundle, which denies, and no second call is made. The
// first call may have done the work (a 503 from a write), so the action is
// unknown, saying it was denied, until its outcome is settled.
func TestARetryThatPolicyNowDeniesIsNotMade(t *testing.T) {
	g := newGovernedBed(t)
	ts := g.held("ok")
	taskID, actionID := g.propose("t-reval-deny", "charge", "card-1")
	first := g.waitAction(taskID, actionID, status(stewardv1.ActionStatus_ACTION_STATUS_DISPATCHED))
	stewardtest.Eventually(t, 30*time.Second, func() (bool, string) { return ts.callCount() == 1, fmt.Sprintf("%d calls", ts.callCount()) })
	g.addPolicy(`deny_reasons contains "charges are frozen for the audit" if input.action.tool == "charge"`)
	close(ts.release)
	a := g.waitAction(taskID, actionID, status(stewardv1.ActionStatus_ACTION_STATUS_UNKNOWN))

	if ts.callCount() != 1 {
		t.Fatalf("%d calls; want the first only", ts.callCount())
	}
	if a.Snapshot.SnapshotId == first.Snapshot.SnapshotId || a.Snapshot.Decision != stewardv1.PolicyDecision_POLICY_DECISION_DENY ||
		a.Snapshot.BundleRevision != g.engine.Revision() || !strings.Contains(a.Outcome.GetReason(), "denied before attempt 2 (charges are frozen for the audit)") {
		t.Fatalf("snapshot %v, outcome %q; want a new deny under the new bundle", a.Snapshot, a.Outcome.GetReason())
	}
	if n := g.count(taskID, event.TypeActionDispatched); n != 1 {
		t.Errorf("%d dispatches; want 1", n)
	}
	if n := g.count(taskID, event.TypeActionPermitted); n != 1 {
		t.Errorf("%d permits; want the first only", n)
	}
}

// TestARetryThatNeedsOtherRolesWaitsForThem: policy now asks another role
// for the action; the retry waits for a new approval, and once it is given
// the action goes on under a new permit.
func TestARetryThatNeedsOtherRolesWaitsForThem(t *testing.T) {
	g := newGovernedBed(t)
	ts := g.held("ok")
	taskID, actionID := g.propose("t-reval-roles", "charge", "card-1")
	g.waitAction(taskID, actionID, status(stewardv1.ActionStatus_ACTION_STATUS_DISPATCHED))
	stewardtest.Eventually(t, 30*time.Second, func() (bool, string) { return ts.callCount() == 1, fmt.Sprintf("%d calls", ts.callCount()) })
	g.addPolicy(`approval_reasons contains "treasury signs charges now" if input.action.tool == "charge"
required_approver_roles contains "treasury" if input.action.tool == "charge"`)
	close(ts.release)
	a := g.waitAction(taskID, actionID, status(stewardv1.ActionStatus_ACTION_STATUS_AWAITING_APPROVAL))
	if !task.SameRoles(a.Approval.RequiredRoles, []string{"authorizer", "treasury"}) {
		t.Fatalf("approval asks %v; want authorizer and treasury", a.Approval.RequiredRoles)
	}
	g.append(taskID, &stewardv1.ApprovalDecided{ApprovalId: a.Approval.ApprovalId, ActionId: actionID, ActionHash: a.ActionHash,
		Decision: stewardv1.ApprovalDecision_APPROVAL_DECISION_APPROVE, DecidedBy: "user:tess"})
	done := g.waitAction(taskID, actionID, status(succeededS))
	if ts.callCount() != 2 || done.Attempt != 2 {
		t.Fatalf("%d calls, attempt %d; want 2 and 2", ts.callCount(), done.Attempt)
	}
}

// TestAnExpiredPermitIsNeverClaimed: with the execution plane's clock past
// a permit's expiry, the permit is not claimed; governance takes a new
// snapshot and issues a new permit, under which the one dispatch is made.
func TestAnExpiredPermitIsNeverClaimed(t *testing.T) {
	g := openGovernedBed(t)
	var ahead atomic.Int64 // how far the execution plane's clock is ahead
	g.cfg.Now = func() time.Time { return time.Now().Add(time.Duration(ahead.Load())) }
	plane, err := execution.New(g.log, slog.New(slog.NewTextHandler(testWriter{t}, nil)), g.cfg)
	if err != nil {
		t.Fatal(err)
	}
	g.plane = plane // registers the tool; reacts to nothing yet
	ts := startScriptedTool(t, "ok")
	g.register(ts, "charge", false, nil)

	// The first permit, with no execution plane to claim it.
	gov := g.startGovernance()
	taskID, actionID := g.propose("t-expired", "charge", "card-1")
	old := g.waitAction(taskID, actionID, status(stewardv1.ActionStatus_ACTION_STATUS_PERMITTED))
	gov.Stop()
	// The execution plane comes up an hour later, as it sees it.
	ahead.Store(int64(time.Hour))
	if err := plane.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(plane.Stop)
	g.waitAction(taskID, actionID, status(stewardv1.ActionStatus_ACTION_STATUS_REVALIDATING))
	// Time runs on from now; governance decides again.
	ahead.Store(0)
	g.startGovernance()
	done := g.waitAction(taskID, actionID, status(succeededS))

	if done.Permit.PermitId == old.Permit.PermitId || done.Snapshot.SnapshotId == old.Snapshot.SnapshotId {
		t.Fatalf("permit %s, snapshot %s: want both new", done.Permit.PermitId, done.Snapshot.SnapshotId)
	}
	var revalidatedAt uint64
	var snapshotsAfter, dispatches int
	for _, r := range g.history(taskID) {
		switch ev := r.Event; {
		case ev.GetActionClaimed().GetPermitId() == old.Permit.PermitId:
			t.Errorf("the expired permit %s was claimed", old.Permit.PermitId)
		case ev.GetActionRevalidating() != nil:
			if rv := ev.GetActionRevalidating(); rv.PermitId != old.Permit.PermitId || rv.Reason != stewardv1.RevalidationReason_REVALIDATION_REASON_EXPIRED {
				t.Errorf("revalidation %v; want the old permit, expired", rv)
			}
			revalidatedAt = r.Sequence
		case ev.GetPolicyEvaluated() != nil && revalidatedAt > 0:
			snapshotsAfter++
		case ev.GetActionDispatched() != nil:
			dispatches++
			if ev.GetActionDispatched().PermitId != done.Permit.PermitId {
				t.Errorf("a dispatch under %s; want the new permit %s", ev.GetActionDispatched().PermitId, done.Permit.PermitId)
			}
		}
	}
	if revalidatedAt == 0 || snapshotsAfter != 1 || dispatches != 1 || ts.callCount() != 1 {
		t.Fatalf("revalidated at %d, %d snapshots after, %d dispatches, %d calls; want a revalidation, 1, 1, 1", revalidatedAt, snapshotsAfter, dispatches, ts.callCount())
	}
}
