package governance_test

import (
	"context"
	"testing"

	"github.com/steward-run/steward/pkg/event"
	"github.com/steward-run/steward/pkg/eventlog"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/services/governance"
)

// ignore acknowledges its event and does nothing: the fault.
func ignore(context.Context, *stewardv1.EventRecord) error { return nil }

// TestAStallMarkRedrivesWhatWaitsOnGovernance: while governance's
// consumer is in the hands of reactions that acknowledge and do nothing,
// a signed approval is decided, an action proposed, a permit sent back to
// be decided again (expired) and a plan submitted;
// governance, started after, finds its consumer past them and they stay
// where they are. A stall mark on each task (the state plane's, here
// appended by the test) makes governance decide each again, with its own
// reactions: the approved action is permitted on its signed decision,
// read from the log; the proposed one is permitted; the revalidating one
// gets a new permit; the plan is judged.
// A redelivery of everything records nothing twice.
func TestAStallMarkRedrivesWhatWaitsOnGovernance(t *testing.T) {
	e := newHarness(t)
	ctx := context.Background()
	e.start(t)
	e.create(t, "approved", "user:ana", credContract([]string{"wire"}, []string{"payments:write"}))
	wire := e.propose(t, "approved", "w1", "wire")
	a := e.waitStatus("approved", wire, stewardv1.ActionStatus_ACTION_STATUS_AWAITING_APPROVAL)
	e.create(t, "revalidating", "user:ana", credContract([]string{"search"}, nil))
	again := e.propose(t, "revalidating", "s1", "search")
	old := e.waitStatus("revalidating", again, stewardv1.ActionStatus_ACTION_STATUS_PERMITTED).Permit.PermitId
	e.Settle(governance.PlaneName)
	e.plane.Stop()

	sub, err := e.Log.React(ctx, governance.PlaneName, eventlog.OnRecord[*stewardv1.ApprovalDecided](ignore),
		eventlog.OnRecord[*stewardv1.ActionProposed](ignore), eventlog.OnRecord[*stewardv1.PlanSubmitted](ignore),
		eventlog.OnRecord[*stewardv1.ActionRevalidating](ignore))
	if err != nil {
		t.Fatal(err)
	}
	d := &stewardv1.ApprovalDecided{ApprovalId: a.Approval.ApprovalId, ActionId: wire, ActionHash: a.ActionHash,
		Decision: stewardv1.ApprovalDecision_APPROVAL_DECISION_APPROVE, DecidedBy: "user:bo"}
	if d.Signed, err = e.signer.SignDecision(d); err != nil { // as Decide signs it
		t.Fatal(err)
	}
	e.Append("approved", d)
	e.Append("revalidating", &stewardv1.ActionRevalidating{ActionId: again, PermitId: old, Reason: stewardv1.RevalidationReason_REVALIDATION_REASON_EXPIRED})
	e.create(t, "proposed", "user:ana", credContract([]string{"search"}, nil))
	search := e.propose(t, "proposed", "s1", "search")
	e.create(t, "plan", "user:ana", planContract())
	hash := e.submitPlan(t, "plan", 1, "search")
	e.Settle(governance.PlaneName)
	sub.Stop()

	e.start(t)
	e.Settle(governance.PlaneName)
	// Stranded: governance has caught up with the log and left them.
	e.waitStatus("approved", wire, stewardv1.ActionStatus_ACTION_STATUS_APPROVED)
	e.waitStatus("proposed", search, stewardv1.ActionStatus_ACTION_STATUS_PROPOSED)
	e.waitStatus("revalidating", again, stewardv1.ActionStatus_ACTION_STATUS_REVALIDATING)
	if g := e.WaitTask("plan", func(*stewardv1.Task) bool { return true }).Plan.GetGovernance(); g != stewardv1.PlanGovernance_PLAN_GOVERNANCE_PENDING {
		t.Fatalf("the fault did not strand the plan: it is %v", g)
	}

	for _, id := range []string{"approved", "proposed", "revalidating", "plan"} {
		e.Append(id, &stewardv1.TaskStalled{Reason: "test: quiet"})
	}
	e.waitStatus("approved", wire, stewardv1.ActionStatus_ACTION_STATUS_PERMITTED)
	e.waitStatus("proposed", search, stewardv1.ActionStatus_ACTION_STATUS_PERMITTED)
	e.judged("plan", hash, anyJudgement)
	if pm := e.waitStatus("revalidating", again, stewardv1.ActionStatus_ACTION_STATUS_PERMITTED).Permit.PermitId; pm == old {
		t.Errorf("revalidated under the old permit %s", old)
	}
	check := func(when string) {
		t.Helper()
		e.Settle(governance.PlaneName)
		for id, want := range map[string]int{"approved": 1, "proposed": 1, "revalidating": 2} {
			if n := e.counts(t, id)[event.TypeActionPermitted]; n != want {
				t.Errorf("%s: task %s has %d permits, want %d", when, id, n, want)
			}
		}
		if n := e.counts(t, "plan")[event.TypePlanEvaluated]; n != 1 {
			t.Errorf("%s: the plan was judged %d times, want once", when, n)
		}
	}
	check("after the re-drive")
	e.redeliver(t)
	check("after a redelivery")
}
