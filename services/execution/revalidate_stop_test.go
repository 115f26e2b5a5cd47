package execution_test

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/steward-run/steward/pkg/event"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/stewardtest"
	"github.com/steward-run/steward/services/execution"
)

// TestRevalidationOfAnExpiredPermitEnds: the permit's
// expiry is set on governance's clock and read on execution's. With
// execution's clock past the TTL ahead of governance's (skew, or simply
// a permit that takes longer than --permit-ttl to reach a worker), every
// new permit is expired when it arrives: the action is revalidated again
// and again, three events a round, with no bound.
func TestRevalidationOfAnExpiredPermitEnds(t *testing.T) {
	g := openGovernedBed(t)
	var ahead atomic.Int64
	g.cfg.Now = func() time.Time { return time.Now().Add(time.Duration(ahead.Load())) }
	var (
		mu   sync.Mutex
		seen []string
	)
	plane, err := execution.New(g.log, slog.New(levels{Handler: slog.NewTextHandler(testWriter{t}, nil), mu: &mu, seen: &seen}), g.cfg)
	if err != nil {
		t.Fatal(err)
	}
	g.plane = plane
	ts := startScriptedTool(t, "ok")
	g.register(ts, "charge", false, nil)
	ahead.Store(int64(time.Hour)) // execution's clock an hour past governance's: past the default 10m TTL
	if err := plane.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(plane.Stop)
	g.startGovernance()
	taskID, _ := g.propose("t-review-skew", "charge", "card-1")
	// The worker holds off the permit that arrived expired, saying why;
	// in a loop it never would.
	stewardtest.Eventually(t, 20*time.Second, func() (bool, string) {
		mu.Lock()
		defer mu.Unlock()
		return slices.ContainsFunc(seen, func(s string) bool { return strings.Contains(s, "permit arrived already expired") }),
			fmt.Sprintf("%d revalidations, %d permits, no hold-off logged", g.count(taskID, event.TypeActionRevalidating), g.count(taskID, event.TypeActionPermitted))
	})
	if n := g.count(taskID, event.TypeActionRevalidating); n > 3 {
		t.Fatalf("%d revalidations in 3 s (%d permits, %d calls): the loop does not end", n, g.count(taskID, event.TypeActionPermitted), ts.callCount())
	}
}

// TestADenialAfterACallThatMayHaveWorkedIsNotDenied:
// a write that honours its key did the work and answered 500; that may be
// retried blind with the same op_key, so the action waits to retry. Policy
// now denies it: the revalidation records the action `denied`, which says
// it never ran, though the tool did the work. Issue 11's rule for a call
// that may have arrived and is not called again is `unknown`, settled by
// the status query or a person; as it is, nobody is told, and a
// compensating task does not undo it.
func TestADenialAfterACallThatMayHaveWorkedIsNotDenied(t *testing.T) {
	g := newGovernedBed(t)
	ts := startScriptedTool(t, "work-500", "ok")
	g.register(ts, "charge", true, func(c *stewardv1.ToolContract) {
		c.RetryPolicy.InitialBackoff = durationpb.New(3 * time.Second)
		c.RetryPolicy.MaxBackoff = durationpb.New(3 * time.Second)
	})
	taskID, actionID := g.propose("t-review-worked", "charge", "card-1")
	w := g.waitAction(taskID, actionID, status(stewardv1.ActionStatus_ACTION_STATUS_WAITING))
	g.addPolicy(`deny_reasons contains "charges are frozen for the audit" if input.action.tool == "charge"`)
	a := g.waitAction(taskID, actionID, func(a *stewardv1.Action) bool {
		return a.GetStatus() != stewardv1.ActionStatus_ACTION_STATUS_WAITING && a.GetStatus() != stewardv1.ActionStatus_ACTION_STATUS_REVALIDATING
	})
	if n := ts.executions(w.OpKey); n == 1 && a.Status == stewardv1.ActionStatus_ACTION_STATUS_DENIED {
		t.Fatalf("the tool did the work once under %s, and the action reads %s (%s): want unknown, for the status query to settle", w.OpKey, a.Status, a.Outcome.GetReason())
	}
}

// TestARevalidationSnapshotFromBeforeACrashIsNotTakenUnderANewBundle
// : governance recorded the revalidation's snapshot
// (allow) and stopped before it acted on it; the bundle changed to deny
// the action before it came back. The redelivery reuses the recorded
// snapshot without asking whether the bundle is still the one it was
// taken under (afterDecision does: changedSinceApproval), so a new permit
// follows and the retry is made under a policy no longer in force.
func TestARevalidationSnapshotFromBeforeACrashIsNotTakenUnderANewBundle(t *testing.T) {
	g := openGovernedBed(t)
	gov := g.startGovernance()
	g.start()
	ts := g.held("ok")
	taskID, actionID := g.propose("t-review-crash", "charge", "card-1")
	first := g.waitAction(taskID, actionID, status(stewardv1.ActionStatus_ACTION_STATUS_DISPATCHED))
	stewardtest.Eventually(t, 30*time.Second, func() (bool, string) { return ts.callCount() == 1, fmt.Sprintf("%d calls", ts.callCount()) })
	gov.Stop()
	close(ts.release)
	g.waitAction(taskID, actionID, status(stewardv1.ActionStatus_ACTION_STATUS_REVALIDATING))
	// What governance recorded before it stopped: the round's snapshot.
	g.append(taskID, &stewardv1.PolicyEvaluated{ActionId: actionID, Snapshot: &stewardv1.PolicySnapshot{
		SnapshotId: "snap-" + event.ID(actionID, "revalidate-"+first.Permit.PermitId)[:24], Decision: stewardv1.PolicyDecision_POLICY_DECISION_ALLOW,
		BundleRevision: g.engine.Revision(),
	}})
	g.addPolicy(`deny_reasons contains "charges are frozen for the audit" if input.action.tool == "charge"`)
	g.startGovernance()
	a := g.waitAction(taskID, actionID, func(a *stewardv1.Action) bool {
		return a.GetStatus() == stewardv1.ActionStatus_ACTION_STATUS_DENIED || a.GetStatus() == stewardv1.ActionStatus_ACTION_STATUS_UNKNOWN || a.GetStatus() == succeededS
	})
	// Denied under the bundle in force; the call made may have done the
	// work, so the action is unknown, to be settled, and not called again.
	if a.Status != stewardv1.ActionStatus_ACTION_STATUS_UNKNOWN || !strings.Contains(a.Outcome.GetReason(), "frozen for the audit") || ts.callCount() != 1 {
		t.Fatalf("action %s (%s) after %d calls, under permit %s: want unknown, denied under the bundle in force, one call", a.Status, a.Outcome.GetReason(), ts.callCount(), a.Permit.PermitId)
	}
}
