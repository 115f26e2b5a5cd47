package execution_test

import (
	"testing"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/services/execution"
	"github.com/steward-run/steward/services/execution/breaker"
)

// TestAnswerTakesUpPermitsAsAResumeDoes: a permit issued while the task
// waits for input is not used then; the answer lets the task go on, and
// the permit, issued before it, is revalidated before its call, as after
// a resume.
func TestAnswerTakesUpPermitsAsAResumeDoes(t *testing.T) {
	b := newHarness(t, breaker.Config{})
	ts := startTool(t)
	b.register(ts, "charge", false, nil)
	taskID, actionID := b.permit("t-answer", "charge", "card",
		&stewardv1.TaskNeedsInput{Cause: stewardv1.NeedsInputCause_NEEDS_INPUT_CAUSE_ASKED, Question: "Charge the card on file?", Choices: []string{"yes", "no"}})
	b.Settle(execution.PlaneName)
	if a := b.WaitAction(taskID, actionID, func(*stewardv1.Action) bool { return true }); a.Status != stewardv1.ActionStatus_ACTION_STATUS_PERMITTED || ts.Calls() != 0 {
		t.Fatalf("while the task waits for input: action %v, %d calls; want permitted, no call", a.Status, ts.Calls())
	}

	b.Append(taskID, &stewardv1.InputProvided{Answer: "yes"})
	a := b.WaitAction(taskID, actionID, status(stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED))
	if a.LastRevalidation != stewardv1.RevalidationReason_REVALIDATION_REASON_RESUME || a.Permit.GetPermitId() == "pm-"+actionID || ts.Calls() != 1 {
		t.Fatalf("after the answer: revalidated for %v under permit %s, %d calls; want revalidated for the resume, a new permit, one call",
			a.LastRevalidation, a.Permit.GetPermitId(), ts.Calls())
	}
}
