package plandriver

import (
	"context"
	"fmt"

	"github.com/steward-run/steward/pkg/crashpoint"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/plan"
	"github.com/steward-run/steward/pkg/task"
	"google.golang.org/protobuf/types/known/structpb"
)

// items is the list foreach step st runs over (EvalForeach); ok is false
// when it cannot be evaluated, which has failed the step.
func (r *planPass) items(ctx context.Context, st *stewardv1.PlanStepState, outs map[string]plan.Outcome) (items []any, ok bool, err error) {
	items, err = plan.EvalForeach(ctx, r.t.Plan.Plan, st.StepId, plan.Bindings{Steps: outs})
	if err != nil {
		return nil, false, r.end(ctx, st, stewardv1.StepStatus_STEP_STATUS_FAILED, err.Error())
	}
	return items, true, nil
}

// startForeachSubTasks starts a foreach of sub-tasks: it records one
// sub-task id per item, each naming its item, which the next pass
// delegates as a sub_task step's. An empty list starts the step with
// nothing to run: it succeeds at once, its result [].
func (r *planPass) startForeachSubTasks(ctx context.Context, st *stewardv1.PlanStepState, _ *stewardv1.Step, outs map[string]plan.Outcome) error {
	items, ok, err := r.items(ctx, st, outs)
	if !ok {
		return err
	}
	ids := make([]string, 0, len(items))
	for i := range items {
		ids = append(ids, planSubTaskID(r.taskID(), st.StepId, st.Attempts+1, i))
	}
	return r.started(ctx, st, &stewardv1.PlanStepStarted{ItemSubTaskIds: ids})
}

// startForeachActions starts a foreach of actions: one action per item,
// proposed as an action step's is, each under a proposal id naming its
// item, then one record of them all. A crash in the middle proposes the
// same again, which are the ones on the log. An empty list starts the
// step with nothing to run: it succeeds at once, its result [].
func (r *planPass) startForeachActions(ctx context.Context, st *stewardv1.PlanStepState, step *stewardv1.Step, outs map[string]plan.Outcome) error {
	items, ok, err := r.items(ctx, st, outs)
	if !ok {
		return err
	}
	body := step.GetForeach().GetBody()
	ids := make([]string, 0, len(items))
	for i, item := range items {
		target, params, err := plan.EvalParams(ctx, r.t.Plan.Plan, st.StepId, plan.Bindings{Steps: outs, Item: item})
		if err != nil {
			return r.end(ctx, st, stewardv1.StepStatus_STEP_STATUS_FAILED, fmt.Sprintf("item %d: %v", i, err))
		}
		id, stop, err := r.proposeOne(ctx, st, body.GetAction(), target, params, i)
		if stop || err != nil {
			return err
		}
		ids = append(ids, id)
		if i+1 < len(items) {
			crashpoint.Here(crashpoint.DuringForeach)
		}
	}
	return r.started(ctx, st, &stewardv1.PlanStepStarted{ItemActionIds: ids})
}

// followForeach follows running foreach step st by its items' actions
// (followItems).
func (r *planPass) followForeach(ctx context.Context, st *stewardv1.PlanStepState, _ *stewardv1.Step) (bool, error) {
	return r.followItems(ctx, st)
}

// followItems moves running foreach step st on once its items' actions
// (each followed to its latest retry) have ended: the first that failed
// for good fails the step at once; when all succeeded, the step's expect
// is checked on each item's result, with the item.
func (r *planPass) followItems(ctx context.Context, st *stewardv1.PlanStepState) (bool, error) {
	done := true
	for i, id := range st.ActionIds {
		a := r.latest(task.FindAction(r.t, id))
		if a == nil {
			return false, nil
		}
		succeeded, failure := r.ended(a)
		if failure != "" {
			return true, r.end(ctx, st, stewardv1.StepStatus_STEP_STATUS_FAILED, fmt.Sprintf("item %d: %s", i, failure))
		}
		done = done && succeeded
	}
	if !done {
		return false, nil
	}
	return true, r.judgeItems(ctx, st, nil, nil)
}

// judgeItems ends foreach step st, whose items all succeeded with results
// (nil: its actions', read if expect needs them), by its expect over each
// item's result. result is what the step records as its own: nil for a
// foreach of actions, whose result is its actions'.
func (r *planPass) judgeItems(ctx context.Context, st *stewardv1.PlanStepState, results []any, result *structpb.Value) error {
	step := r.definition(st.StepId)
	if step.GetExpect() == "" {
		return r.endWith(ctx, st, stewardv1.StepStatus_STEP_STATUS_SUCCEEDED, "", result)
	}
	outs, err := r.outcomes(ctx)
	if err != nil {
		return err
	}
	if results == nil {
		if results, err = r.itemResults(ctx, st); err != nil {
			return err
		}
	}
	items, err := plan.EvalForeach(ctx, r.t.Plan.Plan, st.StepId, plan.Bindings{Steps: outs})
	if err != nil || len(items) != len(results) {
		// Its dependencies' results are what they were when it started:
		// this is not the step's doing, but it cannot be judged.
		return r.end(ctx, st, stewardv1.StepStatus_STEP_STATUS_FAILED, fmt.Sprintf("validation failure: its items cannot be listed again to check expect: %v", err))
	}
	for i, item := range items {
		ok, err := plan.EvalExpect(ctx, r.t.Plan.Plan, st.StepId, plan.Bindings{Steps: outs, Item: item, Result: results[i]})
		switch {
		case err != nil:
			return r.end(ctx, st, stewardv1.StepStatus_STEP_STATUS_FAILED, fmt.Sprintf("validation failure: item %d: %v", i, err))
		case !ok:
			return r.end(ctx, st, stewardv1.StepStatus_STEP_STATUS_FAILED, fmt.Sprintf("validation failure: item %d: its result does not meet expect %s", i, step.GetExpect()))
		}
	}
	return r.endWith(ctx, st, stewardv1.StepStatus_STEP_STATUS_SUCCEEDED, "", result)
}

// itemResults returns the result of each item of foreach step st, in
// order: its latest action's.
func (r *planPass) itemResults(ctx context.Context, st *stewardv1.PlanStepState) ([]any, error) {
	results := make([]any, len(st.ActionIds))
	for i, id := range st.ActionIds {
		var err error
		if results[i], err = r.d.resultValue(ctx, r.latest(task.FindAction(r.t, id))); err != nil {
			return nil, err
		}
	}
	return results, nil
}

// foreachResult is the result of foreach step st: its items' results, in
// order (itemResults).
func (r *planPass) foreachResult(ctx context.Context, st *stewardv1.PlanStepState) (any, error) {
	return r.itemResults(ctx, st)
}
