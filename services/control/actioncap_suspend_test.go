package control_test

import (
	"context"
	"testing"

	"github.com/steward-run/steward/pkg/errs"
	"github.com/steward-run/steward/pkg/event"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// TestActionCapStopsAgainAfterASuspension: a task stopped at its action
// cap and then suspended while it waits (its deadline passed, say — the
// fold lets a task waiting for input be suspended) runs at its cap when a
// person resumes it, since the resume was from the suspension, not from
// the stop. Its next proposal must stop it for input again, so that a
// person can let it go on; it must not be refused while the task stays
// running, which no ResumeTask can reach.
func TestActionCapStopsAgainAfterASuspension(t *testing.T) {
	r := newHarness(t)
	ctx := context.Background()
	id := r.recoveringTask(t, "cap-suspended", nil, &stewardv1.TaskLimits{MaxActions: 1})
	propose := func(pid string) error {
		_, _, err := r.ctl.ProposeAction(ctx, "agent", &stewardv1.ProposeActionRequest{TaskId: id, ProposalId: pid, Tool: "search"})
		return err
	}
	if err := propose("a"); err != nil {
		t.Fatal(err)
	}
	if err := propose("b"); !errs.Is(err, errs.FailedPrecondition) {
		t.Fatalf("past the cap: %v", err)
	}
	if tk := r.task(t, id); tk.Status != waitingInput {
		t.Fatalf("past the cap: %s", tk.Status)
	}
	r.Append(id, &stewardv1.TaskSuspended{Reason: "deadline passed", Cause: stewardv1.SuspendCause_SUSPEND_CAUSE_DEADLINE})
	r.resume(t, id)
	if tk := r.task(t, id); tk.Status != running {
		t.Fatalf("resumed: %s", tk.Status)
	}
	if err := propose("b"); !errs.Is(err, errs.FailedPrecondition) {
		t.Fatalf("past the cap after the resume: %v", err)
	}
	if tk := r.task(t, id); tk.Status != waitingInput {
		t.Fatalf("past the cap after a resume from a suspension, the task is %s (%s): the proposal was refused, and nothing stopped it for a person to let it go on", tk.Status, tk.StatusReason)
	}
	if n := r.Count(id, event.TypeTaskNeedsInput); n != 2 {
		t.Fatalf("%d stops; want 2", n)
	}
}
