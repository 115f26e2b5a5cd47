package task_test

import (
	"testing"

	"github.com/steward-run/steward/pkg/event"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/stewardtest"
	"github.com/steward-run/steward/pkg/task"
)

// TestReview17dFoldReplaysALogOfThePreviousRelease: the driver of the
// release before i17-fixes, when a revision changed step a between its
// action's proposal and its record, started a afresh at attempt 1 under
// the new version (with a new action). That log is on disk for every task
// that met the race before an upgrade. revised now retires the first
// action at attempt 1 and moves a's attempts past it, so the fold refuses
// the log's next PlanStepStarted: a replay, or steward audit verify, of a
// task the old binary wrote fails.
func TestReview17dFoldReplaysALogOfThePreviousRelease(t *testing.T) {
	proposed := func(id string) event.Payload {
		return &stewardv1.ActionProposed{Action: &stewardv1.Action{ActionId: id, ActionHash: "h" + id, RequestHash: "r" + id, Tool: "search", PlanStepId: "a"}}
	}
	v2 := planOf(2, "a")
	v2.Steps[0].GetAction().Target = "a-changed"
	events := []event.Payload{created(), started(),
		planSubmitted(planOf(1, "a"), "h1", nil), judged(1, "h1", planAllow),
		proposed("a1"), // the v1 pass proposed, then the revision came first
		planSubmitted(v2, "h2", &stewardv1.PlanRevision{ReplacesVersion: 1, Changed: []string{"a"}}), judged(2, "h2", planAllow),
		proposed("a2"), &stewardv1.PlanStepStarted{Version: 2, StepId: "a", ActionId: "a2", Attempt: 1},
	}
	if _, err := task.Fold(stewardtest.History(t, "t1", events...)); err != nil {
		t.Fatalf("a log the previous release wrote no longer folds: %v", err)
	}
}
