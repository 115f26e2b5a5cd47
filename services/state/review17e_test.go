package state

import (
	"strings"
	"testing"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// TestReview17eTimelineNamesWhatAStepStarted: the timeline tells every
// PlanStepStarted as "…: action <id>". A foreach's, a sub-task's, a
// checkpoint's or a wait's start names no action, and the line ends
// "action " — the items' actions, the sub-task delegated, the wait's end
// are not said (seen on the real binary: "Plan step sub started
// (attempt 2): action ").
func TestReview17eTimelineNamesWhatAStepStarted(t *testing.T) {
	for name, s := range map[string]*stewardv1.PlanStepStarted{
		"foreach":    {StepId: "each", Attempt: 1, ItemActionIds: []string{"act-1", "act-2"}},
		"sub_task":   {StepId: "sub", Attempt: 2, SubTaskId: "task-9"},
		"checkpoint": {StepId: "ok", Attempt: 1},
	} {
		got := planSummary(&stewardv1.Event{Payload: &stewardv1.Event_PlanStepStarted{PlanStepStarted: s}})
		if strings.HasSuffix(got, "action ") {
			t.Errorf("%s: %q names an empty action", name, got)
		}
	}
}
