package task_test

import (
	"strings"
	"testing"

	"github.com/steward-run/steward/pkg/event"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/stewardtest"
	"github.com/steward-run/steward/pkg/task"
)

// TestResumeAtTheCapGrantsMoreActions: a task waiting for input that a
// resume lets run again while it is at its action cap may propose
// max_actions more; resumed under its cap, or from a pause, it gets none.
func TestResumeAtTheCapGrantsMoreActions(t *testing.T) {
	c := created()
	c.(*stewardv1.TaskCreated).Contract.Limits = &stewardv1.TaskLimits{MaxActions: 1}
	stop := &stewardv1.TaskNeedsInput{Reason: "cap", Cause: stewardv1.NeedsInputCause_NEEDS_INPUT_CAUSE_ACTION_CAP}
	proposal := func(id string) event.Payload {
		return &stewardv1.ActionProposed{Action: &stewardv1.Action{ActionId: id, ActionHash: "h" + id, RequestHash: "r" + id, Tool: "charge"}}
	}
	for _, tc := range []struct {
		name    string
		steps   []event.Payload
		granted uint32
		err     string
	}{
		{"under the cap", []event.Payload{stop, &stewardv1.TaskResumed{}}, 0, ""},
		{"at the cap", []event.Payload{proposal("a1"), stop, &stewardv1.TaskResumed{}, proposal("a2")}, 1, ""},
		{"twice", []event.Payload{proposal("a1"), stop, &stewardv1.TaskResumed{}, proposal("a2"), stop, &stewardv1.TaskResumed{}, proposal("a3")}, 2, ""},
		{"past the grant", []event.Payload{proposal("a1"), stop, &stewardv1.TaskResumed{}, proposal("a2"), proposal("a3")}, 1, "max_actions"},
		{"paused, not stopped", []event.Payload{proposal("a1"), &stewardv1.TaskPaused{}, &stewardv1.TaskResumed{}, proposal("a2")}, 0, "max_actions"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tk, err := task.Fold(stewardtest.History(t, "t1", append([]event.Payload{c, started()}, tc.steps...)...))
			switch {
			case tc.err != "":
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("%v; want an error naming %s", err, tc.err)
				}
			case err != nil:
				t.Fatal(err)
			case tk.ActionsGranted != tc.granted:
				t.Fatalf("%d granted; want %d", tk.ActionsGranted, tc.granted)
			}
		})
	}
}
