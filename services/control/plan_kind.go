package control

import (
	"fmt"

	"github.com/steward-run/steward/pkg/errs"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/task"
)

// A running step keeps its kind (docs/plans.md, "Submitting a plan"): the
// driver follows it by what it started — an action and the retries of
// it, its items' actions, its sub-tasks, its question, its timer — and
// the fold checks each start against the step's definition, so a
// revision may change what a running step asks, not what it is. Work of
// another kind is another step, under another id, or the same one once
// the step has ended.

// stepKind names, in words, the kind of step s as the driver runs it.
func stepKind(s *stewardv1.Step) string {
	switch {
	case s.GetSubTask() != nil:
		return "a sub_task"
	case s.GetCheckpoint() != nil:
		return "a checkpoint"
	case s.GetWait() != nil:
		return "a wait"
	case s.GetForeach().GetBody().GetSubTask() != nil:
		return "a foreach of sub-tasks"
	case s.GetForeach() != nil:
		return "a foreach of actions"
	}
	return "an action"
}

// keepsKinds refuses revision pl of t's plan if it changes the kind of a
// step that is running, naming the step's field.
func keepsKinds(t *stewardv1.Task, pl *stewardv1.Plan) error {
	for i, s := range pl.GetSteps() {
		st := task.FindStep(t, s.GetId())
		if st == nil || task.StepStatus(t.Plan, st) != stewardv1.StepStatus_STEP_STATUS_RUNNING {
			continue
		}
		if was, now := stepKind(task.StepDefinition(t.Plan, s.GetId())), stepKind(s); now != was {
			return errs.Field(fmt.Sprintf("plan.steps[%d]", i), "makes step %s %s, but it runs as %s: a running step may change kind only once it ends", s.GetId(), now, was)
		}
	}
	return nil
}
