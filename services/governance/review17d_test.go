package governance_test

import (
	"testing"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// TestReview17dPermittedActionOfAWithdrawnStepRunsToItsEnd: docs/plans.md
// and docs/permits.md: an action of a withdrawn step "permitted already
// runs to its end, on the record". A permitted search, dispatched once,
// fails transiently; the execution plane's own retry asks governance for
// a new permit (revalidation, reason retry). PlanWithdrew refuses it, and
// the action is denied mid-run: the permitted action does not run to its
// end (its tool's retries are cut off).
func TestReview17dPermittedActionOfAWithdrawnStepRunsToItsEnd(t *testing.T) {
	e := newGovEnv(t)
	e.start(t)
	e.create(t, "p", "user:ana", planContract())
	e.credentialed("p")
	e.judged("p", e.submitPlan(t, "p", 1, "search", "search"), anyJudgement)
	id := e.proposeWith(t, "p", "plan-s1-1-h", "search", "", "agent", map[string]any{"n": 1}, nil,
		func(a *stewardv1.Action) { a.PlanStepId = "s1" })
	a := e.waitStatus("p", id, stewardv1.ActionStatus_ACTION_STATUS_PERMITTED)
	e.judged("p", e.submitPlan(t, "p", 2, "search"), anyJudgement) // s1 withdrawn while its action runs
	first := a.Permit.PermitId
	e.used(t, "p", id, first, 1)
	a = e.WaitAction("p", id, func(a *stewardv1.Action) bool {
		return a.Status == stewardv1.ActionStatus_ACTION_STATUS_DENIED ||
			(a.Status == stewardv1.ActionStatus_ACTION_STATUS_PERMITTED && a.Permit.GetPermitId() != first)
	})
	if a.Status == stewardv1.ActionStatus_ACTION_STATUS_DENIED {
		t.Fatalf("a permitted action of a withdrawn step was denied at its execution retry (%q): it does not run to its end", a.Outcome.GetReason())
	}
}
