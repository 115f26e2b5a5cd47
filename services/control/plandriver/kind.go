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
	// runs is what step s runs (What).
	runs func(s *stewardv1.Step) Runs
}

// Runs is what a step runs: the action it calls or the sub-task it
// delegates (for a foreach, each item's), or neither, and the field of
// the step that defines it.
type Runs struct {
	Call    *stewardv1.ActionStep
	SubTask *stewardv1.SubTaskStep
	Field   string
	// Foreach says the step runs Call or SubTask for each item of a list
	// of at most Items.
	Foreach bool
	Items   uint32
}

// MostSubTasks is the most sub-tasks the step has running at once: one
// for a sub_task step, max_items for a foreach of sub-tasks.
func (r Runs) MostSubTasks() int64 {
	switch {
	case r.SubTask == nil:
		return 0
	case r.Foreach:
		return int64(r.Items)
	}
	return 1
}

// What is what step s runs, for a check of a plan before it runs.
func What(s *stewardv1.Step) Runs { return kindOf(s).runs(s) }

func runsAction(s *stewardv1.Step) Runs { return Runs{Call: s.GetAction(), Field: "action"} }
func runsSubTask(s *stewardv1.Step) Runs {
	return Runs{SubTask: s.GetSubTask(), Field: "sub_task"}
}
func runsItemActions(s *stewardv1.Step) Runs {
	f := s.GetForeach()
	return Runs{Call: f.GetBody().GetAction(), Field: "foreach.body.action", Foreach: true, Items: f.GetMaxItems()}
}
func runsItemSubTasks(s *stewardv1.Step) Runs {
	f := s.GetForeach()
	return Runs{SubTask: f.GetBody().GetSubTask(), Field: "foreach.body.sub_task", Foreach: true, Items: f.GetMaxItems()}
}
func runsNothing(*stewardv1.Step) Runs { return Runs{} }

// kindOf is the one place the driver tells the kinds of step apart: what
// it does with step s.
func kindOf(s *stewardv1.Step) stepKind {
	switch {
	case s.GetSubTask() != nil:
		// Recorded before it is delegated (followSubTasks delegates it).
		return stepKind{name: "a sub_task", start: (*planPass).startSubTask, follow: (*planPass).followAction, result: (*planPass).actionResult, runs: runsSubTask}
	case s.GetCheckpoint() != nil:
		return stepKind{name: "a checkpoint", start: (*planPass).startCheckpoint, follow: (*planPass).followCheckpoint, result: (*planPass).actionResult, runs: runsNothing}
	case s.GetWait() != nil:
		return stepKind{name: "a wait", start: (*planPass).startWaitStep, follow: (*planPass).followAction, result: (*planPass).actionResult, runs: runsNothing}
	case s.GetForeach().GetBody().GetSubTask() != nil:
		return stepKind{name: "a foreach of sub-tasks", start: (*planPass).startForeachSubTasks, follow: (*planPass).followForeach, result: (*planPass).foreachResult, runs: runsItemSubTasks}
	case s.GetForeach() != nil:
		return stepKind{name: "a foreach of actions", start: (*planPass).startForeachActions, follow: (*planPass).followForeach, result: (*planPass).foreachResult, runs: runsItemActions}
	}
	return stepKind{name: "an action", start: (*planPass).startAction, follow: (*planPass).followAction, result: (*planPass).actionResult, runs: runsAction}
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
