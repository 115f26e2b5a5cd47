package state

import (
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// TestTimelineSaysWhatAStepStarted: the timeline's line for a step's
// start names what it began, whatever its kind.
func TestTimelineSaysWhatAStepStarted(t *testing.T) {
	end := time.Date(2026, 12, 2, 3, 0, 0, 0, time.UTC)
	for want, s := range map[string]*stewardv1.PlanStepStarted{
		"Plan step fetch started (attempt 1): action act-1":                     {StepId: "fetch", Attempt: 1, ActionId: "act-1"},
		"Plan step each started (attempt 1): 2 items, actions act-1, act-2":     {StepId: "each", Attempt: 1, ItemActionIds: []string{"act-1", "act-2"}},
		"Plan step sub started (attempt 2): sub-task task-9":                    {StepId: "sub", Attempt: 2, SubTaskId: "task-9"},
		"Plan step subs started (attempt 1): 2 items, sub-tasks task-8, task-9": {StepId: "subs", Attempt: 1, ItemSubTaskIds: []string{"task-8", "task-9"}},
		"Plan step cool started (attempt 1): waits until 2026-12-02T03:00:00Z":  {StepId: "cool", Attempt: 1, WaitUntil: timestamppb.New(end)},
		"Plan step ok started (attempt 1)":                                      {StepId: "ok", Attempt: 1},
	} {
		if got := planSummary(&stewardv1.Event{Payload: &stewardv1.Event_PlanStepStarted{PlanStepStarted: s}}); got != want {
			t.Errorf("got %q, want %q", got, want)
		}
	}
}
