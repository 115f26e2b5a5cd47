package task

import (
	"fmt"

	"google.golang.org/protobuf/proto"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// What policy decides about an action: its snapshot, or a denial.

// evaluation records policy's snapshot on the action it judged.
func evaluation(t *stewardv1.Task, ev *stewardv1.Event) *actionChange {
	tr := &actionChange{id: ev.GetPolicyEvaluated().ActionId}
	// A fresh evaluation after approval keeps the action approved; one
	// on revalidation keeps it revalidating.
	tr.from = []stewardv1.ActionStatus{proposed, approved, revalidating}
	tr.apply = func(a *stewardv1.Action) {
		a.Snapshot = ev.GetPolicyEvaluated().Snapshot
		// Kept beside it, so governance can check it before acting on it.
		a.SnapshotSigned = ev.GetPolicyEvaluated().Signed
		if a.Status == proposed {
			a.Status = evaluated
		}
	}
	return tr
}

// denial ends an action policy (or a revoked credential) refuses.
func denial(t *stewardv1.Task, ev *stewardv1.Event) *actionChange {
	// An action awaiting approval is denied when its task's
	// credential is revoked: the approval is closed undecided, as for
	// a withdrawn action, so nobody can decide it any more.
	// A revalidated action is denied with the cost of the calls it
	// already made.
	d := ev.GetActionDenied()
	tr := &actionChange{id: d.ActionId, from: []stewardv1.ActionStatus{proposed, evaluated, awaitingApproval, approved, revalidating}, to: denied}
	tr.check = func(a *stewardv1.Action) error {
		if d.CostMicros != 0 && a.Attempt == 0 {
			return fmt.Errorf("a denial carries a cost only for calls made, and none was")
		}
		return CheckSpend(t, 0, d.CostMicros)
	}
	tr.apply = func(a *stewardv1.Action) {
		if a.Status == awaitingApproval && a.Approval != nil {
			a.Approval = proto.CloneOf(a.Approval)
			a.Approval.Withdrawn = true
		}
		a.Outcome = &stewardv1.Outcome{Status: denied, Reason: joinReasons(d.Reasons), FinishedAt: ev.Time, Attempt: a.Attempt, CostMicros: d.CostMicros}
		if mayHaveWorked(a) {
			tr.to = unknown
			a.Outcome.Status, a.Outcome.FailureClass, a.Outcome.Reason = unknown, stewardv1.FailureClass_FAILURE_CLASS_UNKNOWN, stoppedAfterCalls("denied", a, a.Outcome.Reason)
		}
		clearWait(a)
		if d.CostMicros > 0 {
			spend(t, 0, d.CostMicros, a.MilestoneId)
		}
	}
	return tr
}
