package task_test

import (
	"slices"
	"testing"

	"github.com/steward-run/steward/pkg/errs"
	"github.com/steward-run/steward/pkg/event"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/stewardtest"
	"github.com/steward-run/steward/pkg/task"
)

func stepStarted(step, actionID string, attempt uint32) event.Payload {
	return &stewardv1.PlanStepStarted{Version: 1, StepId: step, ActionId: actionID, Attempt: attempt}
}

func stepEnded(step string, s stewardv1.StepStatus) event.Payload {
	return &stewardv1.PlanStepEnded{Version: 1, StepId: step, Status: s, Reason: "why"}
}

func stepAction(id, retryOf string) event.Payload {
	return &stewardv1.ActionProposed{Action: &stewardv1.Action{ActionId: id, ActionHash: "h" + id, RequestHash: "r", Tool: "search", RetryOf: retryOf}}
}

// runningPlan is a task whose allowed plan's step a runs action a1.
func runningPlan() []event.Payload {
	return []event.Payload{created(), started(), planSubmitted(planOf(1, "a", "b"), "h1", nil), judged(1, "h1", planAllow),
		stepAction("a1", ""), stepStarted("a", "a1", 1)}
}

// TestFoldMovesPlanSteps: a step started runs its action, which it stands
// for in progress.remaining; a retry of that action starts it again; it
// ends succeeded, and a pending step may be skipped; a plan whose steps
// are all done leaves nothing remaining.
func TestFoldMovesPlanSteps(t *testing.T) {
	tk, err := task.Fold(stewardtest.History(t, "t1", runningPlan()...))
	if err != nil {
		t.Fatal(err)
	}
	a := task.FindStep(tk, "a")
	if a.Status != stewardv1.StepStatus_STEP_STATUS_RUNNING || !slices.Equal(a.ActionIds, []string{"a1"}) || a.Attempts != 1 {
		t.Fatalf("a = %v", a)
	}
	if got := tk.Progress.GetRemaining(); !slices.Equal(got, []string{"a", "b"}) {
		t.Fatalf("remaining = %v, want the steps, a standing for its action", got)
	}
	tk, err = task.Fold(stewardtest.History(t, "t1", append(runningPlan(),
		stepAction("a2", "a1"), stepStarted("a", "a2", 2),
		stepEnded("a", stewardv1.StepStatus_STEP_STATUS_SUCCEEDED), stepEnded("b", stewardv1.StepStatus_STEP_STATUS_SKIPPED))...))
	if err != nil {
		t.Fatal(err)
	}
	a, b := task.FindStep(tk, "a"), task.FindStep(tk, "b")
	if a.Status != stewardv1.StepStatus_STEP_STATUS_SUCCEEDED || !slices.Equal(a.ActionIds, []string{"a1", "a2"}) || a.Attempts != 2 {
		t.Fatalf("a = %v", a)
	}
	if b.Status != stewardv1.StepStatus_STEP_STATUS_SKIPPED || b.Reason != "why" {
		t.Fatalf("b = %v", b)
	}
	if got := tk.Progress.GetRemaining(); slices.Contains(got, "a") || slices.Contains(got, "b") {
		t.Fatalf("remaining = %v after every step is done", got)
	}
}

// TestFoldRefusesStepEvents: each step event that does not follow from
// the plan as it stands is refused.
func TestFoldRefusesStepEvents(t *testing.T) {
	base := runningPlan()
	pending := base[:len(base)-1] // a1 proposed, step a not started
	tests := []struct {
		name   string
		events []event.Payload
	}{
		{"a start before the plan is judged", []event.Payload{created(), started(), planSubmitted(planOf(1, "a"), "h1", nil), stepAction("a1", ""), stepStarted("a", "a1", 1)}},
		{"a start of a denied plan", []event.Payload{created(), started(), planSubmitted(planOf(1, "a"), "h1", nil), judged(1, "h1", planDeny), stepAction("a1", ""), stepStarted("a", "a1", 1)}},
		{"a start naming no action", append(slices.Clip(pending), stepStarted("a", "a9", 1))},
		{"a start of another version", append(slices.Clip(pending), &stewardv1.PlanStepStarted{Version: 2, StepId: "a", ActionId: "a1", Attempt: 1})},
		{"a start of no step", append(slices.Clip(pending), stepStarted("z", "a1", 1))},
		{"a start out of its attempt", append(slices.Clip(pending), stepStarted("a", "a1", 2))},
		{"a second start not of a retry", append(slices.Clip(base), stepAction("a2", ""), stepStarted("a", "a2", 2))},
		{"a success of a step not started", append(slices.Clip(pending), stepEnded("a", stewardv1.StepStatus_STEP_STATUS_SUCCEEDED))},
		{"a skip of a running step", append(slices.Clip(base), stepEnded("a", stewardv1.StepStatus_STEP_STATUS_SKIPPED))},
		{"an end as withdrawn", append(slices.Clip(base), stepEnded("a", stewardv1.StepStatus_STEP_STATUS_WITHDRAWN))},
		{"a second end", append(slices.Clip(base), stepEnded("a", stewardv1.StepStatus_STEP_STATUS_FAILED), stepEnded("a", stewardv1.StepStatus_STEP_STATUS_FAILED))},
	}
	kinds := planOf(1, "a")
	kinds.Steps = append(kinds.Steps,
		&stewardv1.Step{Id: "w", Kind: &stewardv1.Step_Wait{Wait: &stewardv1.WaitStep{}}},
		&stewardv1.Step{Id: "f", Kind: &stewardv1.Step_Foreach{Foreach: &stewardv1.ForeachStep{Over: "[]", MaxItems: 1}}},
		&stewardv1.Step{Id: "q", Kind: &stewardv1.Step_Checkpoint{Checkpoint: &stewardv1.CheckpointStep{Question: "ok?"}}},
		&stewardv1.Step{Id: "s", Kind: &stewardv1.Step_SubTask{SubTask: &stewardv1.SubTaskStep{}}},
		&stewardv1.Step{Id: "fs", Kind: &stewardv1.Step_Foreach{Foreach: &stewardv1.ForeachStep{Over: "[]", MaxItems: 1,
			Body: &stewardv1.StepTemplate{Kind: &stewardv1.StepTemplate_SubTask{SubTask: &stewardv1.SubTaskStep{}}}}}})
	kinded := []event.Payload{created(), started(), planSubmitted(kinds, "h1", nil), judged(1, "h1", planAllow), stepAction("a1", "")}
	tests = append(tests, []struct {
		name   string
		events []event.Payload
	}{
		{"a wait started with an action", append(slices.Clip(kinded), stepStarted("w", "a1", 1))},
		{"a wait started with no end", append(slices.Clip(kinded), &stewardv1.PlanStepStarted{Version: 1, StepId: "w", Attempt: 1})},
		{"a foreach started with an action of its own", append(slices.Clip(kinded), stepStarted("f", "a1", 1))},
		{"a foreach started with an item's action not on the task", append(slices.Clip(kinded), &stewardv1.PlanStepStarted{Version: 1, StepId: "f", Attempt: 1, ItemActionIds: []string{"a1", "a9"}})},
		{"a checkpoint started with an action", append(slices.Clip(kinded), stepStarted("q", "a1", 1))},
		{"an action step started with items", append(slices.Clip(kinded), &stewardv1.PlanStepStarted{Version: 1, StepId: "a", ActionId: "a1", Attempt: 1, ItemActionIds: []string{"a1"}})},
		{"an action step started with a sub-task", append(slices.Clip(kinded), &stewardv1.PlanStepStarted{Version: 1, StepId: "a", ActionId: "a1", Attempt: 1, SubTaskId: "c1"})},
		{"a sub_task started with an action", append(slices.Clip(kinded), stepStarted("s", "a1", 1))},
		{"a sub_task started with no sub-task", append(slices.Clip(kinded), &stewardv1.PlanStepStarted{Version: 1, StepId: "s", Attempt: 1})},
		{"a sub_task started out of its attempt", append(slices.Clip(kinded), &stewardv1.PlanStepStarted{Version: 1, StepId: "s", Attempt: 2, SubTaskId: "c1"})},
		{"a foreach of sub-tasks started with items' actions", append(slices.Clip(kinded), &stewardv1.PlanStepStarted{Version: 1, StepId: "fs", Attempt: 1, ItemActionIds: []string{"a1"}})},
		{"a foreach of actions started with items' sub-tasks", append(slices.Clip(kinded), &stewardv1.PlanStepStarted{Version: 1, StepId: "f", Attempt: 1, ItemSubTaskIds: []string{"c1"}})},
	}...)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := task.Fold(stewardtest.History(t, "t1", tt.events...))
			if !errs.Is(err, errs.FailedPrecondition) {
				t.Fatalf("err = %v, want a failed precondition", err)
			}
		})
	}
}

// TestFoldStartsSubTaskSteps: a sub_task step's start names its sub-task,
// and a foreach of sub-tasks' the sub-task of each item, in order.
func TestFoldStartsSubTaskSteps(t *testing.T) {
	p := planOf(1)
	p.Steps = []*stewardv1.Step{
		{Id: "s", Kind: &stewardv1.Step_SubTask{SubTask: &stewardv1.SubTaskStep{}}},
		{Id: "fs", Kind: &stewardv1.Step_Foreach{Foreach: &stewardv1.ForeachStep{Over: "[1, 2]", MaxItems: 2,
			Body: &stewardv1.StepTemplate{Kind: &stewardv1.StepTemplate_SubTask{SubTask: &stewardv1.SubTaskStep{}}}}}},
	}
	tk, err := task.Fold(stewardtest.History(t, "t1", created(), started(), planSubmitted(p, "h1", nil), judged(1, "h1", planAllow),
		&stewardv1.PlanStepStarted{Version: 1, StepId: "s", Attempt: 1, SubTaskId: "c1"},
		&stewardv1.PlanStepStarted{Version: 1, StepId: "fs", Attempt: 1, ItemSubTaskIds: []string{"c2", "c3"}}))
	if err != nil {
		t.Fatal(err)
	}
	s, fs := task.FindStep(tk, "s"), task.FindStep(tk, "fs")
	if s.Status != stewardv1.StepStatus_STEP_STATUS_RUNNING || s.SubTaskId != "c1" || len(s.ActionIds) != 0 {
		t.Fatalf("s = %v", s)
	}
	if fs.Status != stewardv1.StepStatus_STEP_STATUS_RUNNING || !slices.Equal(fs.ItemSubTaskIds, []string{"c2", "c3"}) || fs.SubTaskId != "" {
		t.Fatalf("fs = %v", fs)
	}
}
