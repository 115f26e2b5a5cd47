package plandriver

import (
	"context"
	"fmt"

	"github.com/steward-run/steward/pkg/errs"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/plan"
	"github.com/steward-run/steward/pkg/task"
)

// A running step keeps its kind (docs/plans.md, "Submitting a plan"): the
// driver follows it by what it started — an action and the retries of
// it, its items' actions, its sub-tasks, its question, its timer — and
// the fold checks each start against the step's definition, so a
// revision may change what a running step asks, not what it is. Work of
// another kind is another step, under another id, or the same one once
// the step has ended.

// stepKind is what the driver does with a step of one kind: start it
// once it is ready, follow it while it runs, and read its result once it
// has succeeded.
type stepKind struct {
	// name names the kind in words, for a refusal.
	name string
	// start starts ready step st, defined as step, with the outcomes of
	// the steps before it.
	start func(r *planPass, ctx context.Context, st *stewardv1.PlanStepState, step *stewardv1.Step, outs map[string]plan.Outcome) error
	// follow moves running step st on, if what it runs has ended; moved
	// says whether it appended anything.
	follow func(r *planPass, ctx context.Context, st *stewardv1.PlanStepState, step *stewardv1.Step) (moved bool, err error)
	// result is what succeeded step st gave, where the step records none.
	result func(r *planPass, ctx context.Context, st *stewardv1.PlanStepState) (any, error)
}

// kindOf is the one place the driver tells the kinds of step apart: what
// it does with step s.
func kindOf(s *stewardv1.Step) stepKind {
	switch {
	case s.GetSubTask() != nil:
		// Recorded before it is delegated (followSubTasks delegates it).
		return stepKind{name: "a sub_task", start: (*planPass).startSubTask, follow: (*planPass).followAction, result: (*planPass).actionResult}
	case s.GetCheckpoint() != nil:
		return stepKind{name: "a checkpoint", start: (*planPass).startCheckpoint, follow: (*planPass).followCheckpoint, result: (*planPass).actionResult}
	case s.GetWait() != nil:
		return stepKind{name: "a wait", start: (*planPass).startWaitStep, follow: (*planPass).followAction, result: (*planPass).actionResult}
	case s.GetForeach().GetBody().GetSubTask() != nil:
		return stepKind{name: "a foreach of sub-tasks", start: (*planPass).startForeachSubTasks, follow: (*planPass).followForeach, result: (*planPass).foreachResult}
	case s.GetForeach() != nil:
		return stepKind{name: "a foreach of actions", start: (*planPass).startForeachActions, follow: (*planPass).followForeach, result: (*planPass).foreachResult}
	}
	return stepKind{name: "an action", start: (*planPass).startAction, follow: (*planPass).followAction, result: (*planPass).actionResult}
}

// KeepsKinds refuses revision pl of t's plan if it changes the kind of a
// step that is running, naming the step's field.
func KeepsKinds(t *stewardv1.Task, pl *stewardv1.Plan) error {
	for i, s := range pl.GetSteps() {
		st := task.FindStep(t, s.GetId())
		if st == nil || task.StepStatus(t.Plan, st) != stewardv1.StepStatus_STEP_STATUS_RUNNING {
			continue
		}
		if was, now := kindOf(task.StepDefinition(t.Plan, s.GetId())).name, kindOf(s).name; now != was {
			return errs.Field(fmt.Sprintf("plan.steps[%d]", i), "makes step %s %s, but it runs as %s: a running step may change kind only once it ends", s.GetId(), now, was)
		}
	}
	return nil
}
