package e2e_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/steward-run/steward/pkg/event"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/stewardtest"
	"github.com/steward-run/steward/pkg/task"
	"github.com/steward-run/steward/services/execution"
	"github.com/steward-run/steward/services/execution/adapter"
	"github.com/steward-run/steward/services/governance"
	"github.com/steward-run/steward/services/governance/policy"
)

// What governance decides when the execution plane asks it again about a
// permit (a retry, an expired permit), with both planes in one process on
// the kit's environment: they meet only on its log, as in a deployment.
// The test plays control's part, recording tasks and proposals.

// governedPlanes is the environment, the reference tool, and what the two
// planes start from; governance decides with real OPA from a policy file
// the test may rewrite.
type governedPlanes struct {
	*stewardtest.Env
	t    *testing.T
	tool *stewardtest.Tool
	// exec is the execution plane's configuration, for the test to edit
	// before it builds the plane.
	exec   execution.Config
	engine *policy.Engine
	bundle string // the policy file
	rego   []byte // the default bundle it starts as
}

// chargePath is where the tool takes the calls of the tool "charge".
const chargePath = "/charge"

// held is a first answer that waits until the test releases it, then
// answers 503: the test changes the world while the call is out.
var held = stewardtest.Answer{Code: 503, Hold: stewardtest.HoldUntilRelease}

// newGovernedPlanes starts neither plane. Its tool answers the calls to
// chargePath as script says, then OK, doing the work on every call that
// works, key or no key, so that Executions counts every repeated call.
func newGovernedPlanes(t *testing.T, script ...stewardtest.Answer) *governedPlanes {
	t.Helper()
	env := stewardtest.NewEnv(t)
	rego, err := os.ReadFile("../services/governance/policy/default/steward.rego")
	if err != nil {
		t.Fatal(err)
	}
	bundle := filepath.Join(t.TempDir(), "steward.rego")
	if err := os.WriteFile(bundle, rego, 0o600); err != nil {
		t.Fatal(err)
	}
	engine, err := policy.Load(context.Background(), filepath.Dir(bundle))
	if err != nil {
		t.Fatal(err)
	}
	return &governedPlanes{
		Env: env, t: t, tool: stewardtest.StartTool(t).IgnoreKeys().Script(chargePath, script...),
		exec: execution.Config{
			Tools: env.Tools, Requests: env.Requests, Results: env.Results, Timers: env.Timers, Worker: "w1",
			Adapters: adapter.Set{HTTP: adapter.NewHTTP(nil)}, Lease: 600 * time.Millisecond,
		},
		engine: engine, bundle: bundle, rego: rego,
	}
}

// startGovernance starts a governance plane; stop it with Stop (it is also
// stopped when the test ends).
func (g *governedPlanes) startGovernance() *governance.Plane {
	g.t.Helper()
	p := governance.New(g.Log, g.Logger, governance.Config{Engine: g.engine, Tools: g.Tools, Requests: g.Requests})
	if err := p.Start(context.Background()); err != nil {
		g.t.Fatal(err)
	}
	g.t.Cleanup(p.Stop)
	return p
}

// execution returns an execution plane under g.exec, logging to logger,
// not yet started, with the tool registered through it as "charge" (an
// idempotent write that honours its key, allowed by the default policy,
// without a status query unless edit adds one).
func (g *governedPlanes) execution(logger *slog.Logger, edit func(*stewardv1.ToolContract)) *execution.Plane {
	g.t.Helper()
	p, err := execution.New(g.Log, logger, g.exec)
	if err != nil {
		g.t.Fatal(err)
	}
	c := g.tool.Contract("charge", chargePath)
	c.StatusQuery, c.GetHttp().StatusUrl = false, ""
	if edit != nil {
		edit(c)
	}
	if _, _, err := p.Register(context.Background(), "", "test", c); err != nil {
		g.t.Fatal(err)
	}
	return p
}

// start starts p until the test ends.
func (g *governedPlanes) start(p *execution.Plane) {
	g.t.Helper()
	if err := p.Start(context.Background()); err != nil {
		g.t.Fatal(err)
	}
	g.t.Cleanup(p.Stop)
}

// startBoth starts governance, and an execution plane with the tool's
// contract edited by edit; it returns the governance plane.
func (g *governedPlanes) startBoth(edit func(*stewardv1.ToolContract)) *governance.Plane {
	g.t.Helper()
	gov := g.startGovernance()
	g.start(g.execution(g.Logger, edit))
	return gov
}

// heldCall starts both planes, proposes a charge as task taskID, and
// returns once its first call is held at the tool, with the action as it
// was dispatched: the test changes the world, then releases the call,
// which answers 503, and the retry is revalidated.
func heldCall(t *testing.T, taskID string) (*governedPlanes, *governance.Plane, *stewardv1.Action) {
	t.Helper()
	g := newGovernedPlanes(t, held, stewardtest.OK)
	gov := g.startBoth(func(c *stewardv1.ToolContract) { c.Timeout = durationpb.New(30 * time.Second) })
	actionID := g.propose(taskID)
	first := g.WaitAction(taskID, actionID, actionIs(stewardv1.ActionStatus_ACTION_STATUS_DISPATCHED))
	stewardtest.Eventually(t, 30*time.Second, func() (bool, string) {
		return g.tool.Calls() == 1, fmt.Sprintf("%d calls, want the first held", g.tool.Calls())
	})
	return g, gov, first
}

// addPolicy puts rules after the default bundle and reloads it now.
func (g *governedPlanes) addPolicy(rules string) {
	g.t.Helper()
	if err := os.WriteFile(g.bundle, append(append([]byte{}, g.rego...), "\n"+rules+"\n"...), 0o600); err != nil {
		g.t.Fatal(err)
	}
	if changed, err := g.engine.Reload(context.Background()); err != nil || !changed {
		g.t.Fatalf("reload: changed %v, %v", changed, err)
	}
}

// propose opens a running task and proposes one action, a charge of
// card-1, for governance to decide; it returns the action's id.
func (g *governedPlanes) propose(taskID string) string {
	g.t.Helper()
	a := g.ProposedAction(taskID, "p1", "charge", "card-1")
	a.ProposedBy = "agent"
	g.Append(taskID, &stewardv1.TaskCreated{Contract: &stewardv1.TaskContract{TaskId: taskID, Intent: "test", AllowedTools: []string{"charge"}}},
		&stewardv1.TaskStarted{}, &stewardv1.ActionProposed{Action: a})
	return a.ActionId
}

// history returns the task's events.
func (g *governedPlanes) history(taskID string) []*stewardv1.EventRecord {
	g.t.Helper()
	recs, err := g.Log.Read(context.Background(), taskID)
	if err != nil {
		g.t.Fatal(err)
	}
	return recs
}

func actionIs(s stewardv1.ActionStatus) func(*stewardv1.Action) bool {
	return func(a *stewardv1.Action) bool { return a.GetStatus() == s }
}

// TestARetryIsRevalidatedUnderANewPermit: a transient failure's retry is
// not made under the permit the first attempt used. Governance evaluates
// the action again (a new snapshot), issues a new permit, and attempt 2
// goes out under it with the same op_key.
func TestARetryIsRevalidatedUnderANewPermit(t *testing.T) {
	const taskID = "t-reval-retry"
	g, _, first := heldCall(t, taskID)
	actionID := first.ActionId
	g.tool.Release()
	a := g.WaitAction(taskID, actionID, actionIs(stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED))

	if a.Attempt != 2 || g.tool.Calls() != 2 || g.tool.CallsFor(a.OpKey) != 2 || g.tool.Executions(a.OpKey) != 1 || len(g.tool.Worked()) != 1 {
		t.Fatalf("attempt %d, %d calls, %d with op_key %s, work done %d times in all; want 2 calls, both with the op_key, and the work once",
			a.Attempt, g.tool.Calls(), g.tool.CallsFor(a.OpKey), a.OpKey, len(g.tool.Worked()))
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
	const taskID = "t-reval-deny"
	g, _, first := heldCall(t, taskID)
	actionID := first.ActionId
	g.addPolicy(`deny_reasons contains "charges are frozen for the audit" if input.action.tool == "charge"`)
	g.tool.Release()
	a := g.WaitAction(taskID, actionID, actionIs(stewardv1.ActionStatus_ACTION_STATUS_UNKNOWN))

	if g.tool.Calls() != 1 {
		t.Fatalf("%d calls; want the first only", g.tool.Calls())
	}
	if a.Snapshot.SnapshotId == first.Snapshot.SnapshotId || a.Snapshot.Decision != stewardv1.PolicyDecision_POLICY_DECISION_DENY ||
		a.Snapshot.BundleRevision != g.engine.Revision() || !strings.Contains(a.Outcome.GetReason(), "denied before attempt 2 (charges are frozen for the audit)") {
		t.Fatalf("snapshot %v, outcome %q; want a new deny under the new bundle", a.Snapshot, a.Outcome.GetReason())
	}
	if n := g.Count(taskID, event.TypeActionDispatched); n != 1 {
		t.Errorf("%d dispatches; want 1", n)
	}
	if n := g.Count(taskID, event.TypeActionPermitted); n != 1 {
		t.Errorf("%d permits; want the first only", n)
	}
}

// TestARetryThatNeedsOtherRolesWaitsForThem: policy now asks another role
// for the action; the retry waits for a new approval, and once it is given
// the action goes on under a new permit.
func TestARetryThatNeedsOtherRolesWaitsForThem(t *testing.T) {
	const taskID = "t-reval-roles"
	g, _, dispatched := heldCall(t, taskID)
	actionID := dispatched.ActionId
	g.addPolicy(`approval_reasons contains "treasury signs charges now" if input.action.tool == "charge"
required_approver_roles contains "treasury" if input.action.tool == "charge"`)
	g.tool.Release()
	a := g.WaitAction(taskID, actionID, actionIs(stewardv1.ActionStatus_ACTION_STATUS_AWAITING_APPROVAL))
	if !task.SameRoles(a.Approval.RequiredRoles, []string{"authorizer", "treasury"}) {
		t.Fatalf("approval asks %v; want authorizer and treasury", a.Approval.RequiredRoles)
	}
	g.Append(taskID, &stewardv1.ApprovalDecided{ApprovalId: a.Approval.ApprovalId, ActionId: actionID, ActionHash: a.ActionHash,
		Decision: stewardv1.ApprovalDecision_APPROVAL_DECISION_APPROVE, DecidedBy: "user:tess"})
	done := g.WaitAction(taskID, actionID, actionIs(stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED))
	if g.tool.Calls() != 2 || done.Attempt != 2 {
		t.Fatalf("%d calls, attempt %d; want 2 and 2", g.tool.Calls(), done.Attempt)
	}
}

// TestAnExpiredPermitIsNeverClaimed: with the execution plane's clock past
// a permit's expiry, the permit is not claimed; governance takes a new
// snapshot and issues a new permit, under which the one dispatch is made.
func TestAnExpiredPermitIsNeverClaimed(t *testing.T) {
	g := newGovernedPlanes(t)
	var clock stewardtest.Clock // the execution plane's
	g.exec.Now = clock.Now
	plane := g.execution(g.Logger, nil) // registers the tool; reacts to nothing yet

	// The first permit, with no execution plane to claim it.
	gov := g.startGovernance()
	const taskID = "t-expired"
	actionID := g.propose(taskID)
	old := g.WaitAction(taskID, actionID, actionIs(stewardv1.ActionStatus_ACTION_STATUS_PERMITTED))
	gov.Stop()
	// The execution plane comes up an hour later, as it sees it.
	clock.Advance(time.Hour)
	g.start(plane)
	g.WaitAction(taskID, actionID, actionIs(stewardv1.ActionStatus_ACTION_STATUS_REVALIDATING))
	// Time runs on from now; governance decides again.
	clock.Advance(-time.Hour)
	g.startGovernance()
	done := g.WaitAction(taskID, actionID, actionIs(stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED))

	if done.Permit.PermitId == old.Permit.PermitId || done.Snapshot.SnapshotId == old.Snapshot.SnapshotId {
		t.Fatalf("permit %s, snapshot %s: want both new", done.Permit.PermitId, done.Snapshot.SnapshotId)
	}
	var revalidatedAt uint64
	var snapshotsAfter, dispatches int
	for _, r := range g.history(taskID) {
		switch ev := r.Event; {
		case claimedPermit(ev, old.Permit.PermitId):
			t.Errorf("the expired permit %s was claimed", old.Permit.PermitId)
		case ev.GetActionRevalidating() != nil:
			if rv := ev.GetActionRevalidating(); rv.PermitId != old.Permit.PermitId || rv.Reason != stewardv1.RevalidationReason_REVALIDATION_REASON_EXPIRED {
				t.Errorf("revalidation %v; want the old permit, expired", rv)
			}
			revalidatedAt = r.Sequence
		case (ev.GetPolicyEvaluated() != nil || ev.GetActionPermitted().GetSnapshot() != nil) && revalidatedAt > 0:
			snapshotsAfter++
		case ev.GetActionDispatched() != nil:
			dispatches++
			if ev.GetActionDispatched().PermitId != done.Permit.PermitId {
				t.Errorf("a dispatch under %s; want the new permit %s", ev.GetActionDispatched().PermitId, done.Permit.PermitId)
			}
		}
	}
	if revalidatedAt == 0 || snapshotsAfter != 1 || dispatches != 1 || g.tool.Calls() != 1 {
		t.Fatalf("revalidated at %d, %d snapshots after, %d dispatches, %d calls; want a revalidation, 1, 1, 1", revalidatedAt, snapshotsAfter, dispatches, g.tool.Calls())
	}
}

// TestRevalidationOfAnExpiredPermitEnds: the permit's expiry is set on
// governance's clock and read on execution's. With execution's clock past
// the TTL ahead of governance's (skew, or simply a permit that takes
// longer than --permit-ttl to reach a worker), every new permit is expired
// when it arrives: the action is revalidated again and again, three
// events a round, with no bound.
func TestRevalidationOfAnExpiredPermitEnds(t *testing.T) {
	g := newGovernedPlanes(t)
	var clock stewardtest.Clock // the execution plane's
	g.exec.Now = clock.Now
	logs := &logTap{tb: t}
	plane := g.execution(slog.New(slog.NewTextHandler(logs, nil)), nil)
	clock.Advance(time.Hour) // execution's clock an hour past governance's: past the default 10m TTL
	g.start(plane)
	g.startGovernance()
	const taskID = "t-review-skew"
	g.propose(taskID)
	// The worker holds off the permit that arrived expired, saying why;
	// in a loop it never would.
	stewardtest.Eventually(t, 20*time.Second, func() (bool, string) {
		return logs.said("permit arrived already expired"),
			fmt.Sprintf("%d revalidations, %d permits, no hold-off logged", g.Count(taskID, event.TypeActionRevalidating), g.Count(taskID, event.TypeActionPermitted))
	})
	if n := g.Count(taskID, event.TypeActionRevalidating); n > 3 {
		t.Fatalf("%d revalidations (%d permits, %d calls): the loop does not end", n, g.Count(taskID, event.TypeActionPermitted), g.tool.Calls())
	}
}

// TestADenialAfterACallThatMayHaveWorkedIsNotDenied: a write that honours
// its key did the work and answered 500; that may be retried blind with
// the same op_key, so the action waits to retry. Policy now denies it: the
// revalidation recorded the action `denied`, which says it never ran,
// though the tool did the work. The rule for a call that may have arrived
// and is not called again is `unknown`, settled by the status query or a
// person; a denial told nobody, and a compensating task did not undo it.
func TestADenialAfterACallThatMayHaveWorkedIsNotDenied(t *testing.T) {
	g := newGovernedPlanes(t, stewardtest.WorkThenFail(500), stewardtest.OK)
	g.startBoth(func(c *stewardv1.ToolContract) {
		c.StatusQuery, c.GetHttp().StatusUrl = true, g.tool.URL+"/status"
		c.RetryPolicy.InitialBackoff = durationpb.New(3 * time.Second)
		c.RetryPolicy.MaxBackoff = durationpb.New(3 * time.Second)
	})
	const taskID = "t-review-worked"
	actionID := g.propose(taskID)
	w := g.WaitAction(taskID, actionID, actionIs(stewardv1.ActionStatus_ACTION_STATUS_WAITING))
	g.addPolicy(`deny_reasons contains "charges are frozen for the audit" if input.action.tool == "charge"`)
	a := g.WaitAction(taskID, actionID, func(a *stewardv1.Action) bool {
		return a.GetStatus() != stewardv1.ActionStatus_ACTION_STATUS_WAITING && a.GetStatus() != stewardv1.ActionStatus_ACTION_STATUS_REVALIDATING
	})
	if n := g.tool.Executions(w.OpKey); n == 1 && a.Status == stewardv1.ActionStatus_ACTION_STATUS_DENIED {
		t.Fatalf("the tool did the work once under %s, and the action reads %s (%s): want unknown, for the status query to settle", w.OpKey, a.Status, a.Outcome.GetReason())
	}
}

// TestARevalidationSnapshotFromBeforeACrashIsNotTakenUnderANewBundle:
// governance recorded the revalidation's snapshot (allow) and stopped
// before it acted on it; the bundle changed to deny the action before it
// came back. A redelivery that reused the recorded snapshot without asking
// whether the bundle is still the one it was taken under would issue a new
// permit, and the retry would be made under a policy no longer in force.
func TestARevalidationSnapshotFromBeforeACrashIsNotTakenUnderANewBundle(t *testing.T) {
	const taskID = "t-review-crash"
	g, gov, first := heldCall(t, taskID)
	actionID := first.ActionId
	gov.Stop()
	g.tool.Release()
	g.WaitAction(taskID, actionID, actionIs(stewardv1.ActionStatus_ACTION_STATUS_REVALIDATING))
	// What governance recorded before it stopped: the round's snapshot.
	g.Append(taskID, &stewardv1.PolicyEvaluated{ActionId: actionID, Snapshot: &stewardv1.PolicySnapshot{
		SnapshotId: "snap-" + event.ID(actionID, "revalidate-"+first.Permit.PermitId)[:24], Decision: stewardv1.PolicyDecision_POLICY_DECISION_ALLOW,
		BundleRevision: g.engine.Revision(),
	}})
	g.addPolicy(`deny_reasons contains "charges are frozen for the audit" if input.action.tool == "charge"`)
	g.startGovernance()
	a := g.WaitAction(taskID, actionID, func(a *stewardv1.Action) bool {
		return a.GetStatus() == stewardv1.ActionStatus_ACTION_STATUS_DENIED || a.GetStatus() == stewardv1.ActionStatus_ACTION_STATUS_UNKNOWN ||
			a.GetStatus() == stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED
	})
	// Denied under the bundle in force; the call made may have done the
	// work, so the action is unknown, to be settled, and not called again.
	if a.Status != stewardv1.ActionStatus_ACTION_STATUS_UNKNOWN || !strings.Contains(a.Outcome.GetReason(), "frozen for the audit") || g.tool.Calls() != 1 {
		t.Fatalf("action %s (%s) after %d calls, under permit %s: want unknown, denied under the bundle in force, one call", a.Status, a.Outcome.GetReason(), g.tool.Calls(), a.Permit.PermitId)
	}
}

// logTap is a plane's log, written to the test's and kept for the test to
// look in.
type logTap struct {
	tb    testing.TB
	mu    sync.Mutex
	lines []string
}

func (l *logTap) Write(p []byte) (int, error) {
	line := strings.TrimSuffix(string(p), "\n")
	l.tb.Log(line)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, line)
	return len(p), nil
}

// said says whether a line of the log holds s.
func (l *logTap) said(s string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.ContainsFunc(l.lines, func(line string) bool { return strings.Contains(line, s) })
}
