package plandriver

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"google.golang.org/protobuf/types/known/structpb"

	"github.com/steward-run/steward/pkg/event"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/plan"
	"github.com/steward-run/steward/pkg/task"
)

// endSteps ends each running step whose action has ended for good, whose
// sub-task has ended, or whose wait is over, and starts again each whose action the recovery
// policy retried. moved says whether it appended anything.
func (r *planPass) endSteps(ctx context.Context) (moved bool, err error) {
	for _, st := range r.t.Plan.Steps {
		if st.Status == stewardv1.StepStatus_STEP_STATUS_RUNNING && st.WaitUntil != nil {
			did, err := r.waited(ctx, st)
			if err != nil {
				return moved, err
			}
			moved = moved || did
			continue
		}
		if st.Status != stewardv1.StepStatus_STEP_STATUS_RUNNING {
			continue
		}
		var did bool
		var err error
		def := r.definition(st.StepId)
		if st.SubTaskId != "" || len(st.ItemSubTaskIds) > 0 {
			// By what it started, not by its definition: a revision may
			// have changed a step while it ran.
			did, err = r.followSubTasks(ctx, st)
		} else {
			did, err = kindOf(def).follow(r, ctx, st, def)
		}
		if err != nil {
			return moved, err
		}
		moved = moved || did
	}
	return moved, nil
}

// followAction follows running step st by its last action (follow).
func (r *planPass) followAction(ctx context.Context, st *stewardv1.PlanStepState, _ *stewardv1.Step) (bool, error) {
	a := task.FindAction(r.t, lastOf(st.ActionIds))
	if a == nil {
		return false, nil
	}
	return r.follow(ctx, st, a)
}

// followForeach follows running foreach step st by its items' actions
// (followItems).
func (r *planPass) followForeach(ctx context.Context, st *stewardv1.PlanStepState, _ *stewardv1.Step) (bool, error) {
	return r.followItems(ctx, st)
}

// followCheckpoint follows running checkpoint step st (checkpoint).
func (r *planPass) followCheckpoint(ctx context.Context, st *stewardv1.PlanStepState, step *stewardv1.Step) (bool, error) {
	return r.checkpoint(ctx, st, step.GetCheckpoint())
}

// follow moves running step st on from its action a, if a has ended: a
// success whose result meets the step's expect succeeds the step, one
// that does not fails it (a validation failure of the step); a failure
// the recovery policy retries keeps the step running, on the retry; any
// other end fails it. An action still under way — awaiting approval,
// dispatched, unknown until settled — leaves the step running.
func (r *planPass) follow(ctx context.Context, st *stewardv1.PlanStepState, a *stewardv1.Action) (bool, error) {
	if retry := task.FindAction(r.t, r.d.host.RetryID(r.t, a)); retry != nil && a.Status == stewardv1.ActionStatus_ACTION_STATUS_FAILED {
		return true, r.started(ctx, st, &stewardv1.PlanStepStarted{ActionId: retry.ActionId})
	}
	switch succeeded, failure := r.ended(a); {
	case succeeded:
		return true, r.judge(ctx, st, a)
	case failure != "":
		return true, r.end(ctx, st, stewardv1.StepStatus_STEP_STATUS_FAILED, failure)
	}
	return false, nil
}

// ended says how action a stands for its step: succeeded, or failed for
// good (failure says how), or neither — under way, or failed and about
// to be proposed again by the recovery policy, whose proposal's end
// brings the driver back.
func (r *planPass) ended(a *stewardv1.Action) (succeeded bool, failure string) {
	switch a.Status {
	case stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED:
		return true, ""
	case stewardv1.ActionStatus_ACTION_STATUS_FAILED:
		if r.d.host.RetryDue(r.t, a) {
			return false, ""
		}
		class := strings.ReplaceAll(strings.ToLower(strings.TrimPrefix(a.Outcome.GetFailureClass().String(), "FAILURE_CLASS_")), "_", " ")
		return false, fmt.Sprintf("action %s failed (%s): %s", a.ActionId, class, task.Clip(a.Outcome.GetReason()))
	case stewardv1.ActionStatus_ACTION_STATUS_DENIED, stewardv1.ActionStatus_ACTION_STATUS_REJECTED, stewardv1.ActionStatus_ACTION_STATUS_WITHDRAWN:
		why := a.Outcome.GetReason()
		if why == "" {
			why = strings.Join(a.Snapshot.GetReasons(), "; ")
		}
		return false, fmt.Sprintf("action %s was %s: %s", a.ActionId, task.ActionStatusName(a.Status), task.Clip(why))
	}
	return false, ""
}

// latest is a's latest proposal: a itself, or the last of the retries the
// recovery policy made of it.
func (r *planPass) latest(a *stewardv1.Action) *stewardv1.Action {
	for a != nil {
		next := task.FindAction(r.t, r.d.host.RetryID(r.t, a))
		if next == nil {
			return a
		}
		a = next
	}
	return a
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

// lastOf is the last of ids, or "".
func lastOf(ids []string) string {
	if len(ids) == 0 {
		return ""
	}
	return ids[len(ids)-1]
}

// judge ends step st, whose action a succeeded, by its expect over a's
// result: false, or an error, fails it.
func (r *planPass) judge(ctx context.Context, st *stewardv1.PlanStepState, a *stewardv1.Action) error {
	if r.definition(st.StepId).GetExpect() == "" {
		return r.end(ctx, st, stewardv1.StepStatus_STEP_STATUS_SUCCEEDED, "")
	}
	result, err := r.d.resultValue(ctx, a)
	if err != nil {
		return err
	}
	return r.judgeResult(ctx, st, result, "action "+a.ActionId+" succeeded but its result", nil)
}

// judgeResult ends step st, whose work succeeded with result, by its
// expect over it: false, or an error, fails it, saying that what (result,
// in words) does not meet it. kept is what the step records as its own
// result: nil for an action step, whose result is its action's.
func (r *planPass) judgeResult(ctx context.Context, st *stewardv1.PlanStepState, result any, what string, kept *structpb.Value) error {
	if expect := r.definition(st.StepId).GetExpect(); expect != "" {
		outs, err := r.outcomes(ctx)
		if err != nil {
			return err
		}
		ok, err := plan.EvalExpect(ctx, r.t.Plan.Plan, st.StepId, plan.Bindings{Steps: outs, Result: result})
		switch {
		case err != nil:
			return r.end(ctx, st, stewardv1.StepStatus_STEP_STATUS_FAILED, "validation failure: "+err.Error())
		case !ok:
			return r.end(ctx, st, stewardv1.StepStatus_STEP_STATUS_FAILED, fmt.Sprintf("validation failure: %s does not meet expect %s", what, expect))
		}
	}
	return r.endWith(ctx, st, stewardv1.StepStatus_STEP_STATUS_SUCCEEDED, "", kept)
}

// end records that step st ended as status, while it still stands as
// read.
func (r *planPass) end(ctx context.Context, st *stewardv1.PlanStepState, status stewardv1.StepStatus, reason string) error {
	return r.endWith(ctx, st, status, reason, nil)
}

// endWith is end for a step whose result is its own (a checkpoint's
// answer, a sub-task's result), not its actions'.
func (r *planPass) endWith(ctx context.Context, st *stewardv1.PlanStepState, status stewardv1.StepStatus, reason string, result *structpb.Value) error {
	v := r.version()
	id := r.stepEventID(event.TypePlanStepEnded, st.StepId, st.Attempts)
	return r.d.host.Write(ctx, r.taskID(), func(t *stewardv1.Task) (*stewardv1.Event, error) {
		cur := task.FindStep(t, st.StepId)
		if t.Plan.GetVersion() != v || cur == nil || cur.Status != st.Status || cur.Attempts != st.Attempts {
			return nil, nil
		}
		return r.d.host.Event(r.meta(id), &stewardv1.PlanStepEnded{Version: v, StepId: st.StepId, Status: status, Reason: task.Clip(reason), Result: result})
	})
}

// stopOnFailure applies the on_failure of each failed step that stops the
// plan, once: escalate makes the task wait for a person's input (cause
// NEEDS_INPUT_CAUSE_PLAN_STEP_FAILED); compensate fails the task with
// compensation, as FailTask with compensate does. Each event's id derives
// from the step, so a person's resume is not undone by a redelivery, nor
// by a revision that keeps the failed step. A
// step whose action's own failure the recovery policy escalated already
// is not escalated twice. moved says whether it appended anything.
func (r *planPass) stopOnFailure(ctx context.Context) (moved bool, err error) {
	taskID := r.taskID()
	for _, st := range r.t.Plan.Steps {
		step := r.definition(st.StepId)
		if task.StepStatus(r.t.Plan, st) != stewardv1.StepStatus_STEP_STATUS_FAILED || plan.Done(step, st.Status) {
			continue // a failed step that a revision changed is redone instead
		}
		reason := fmt.Sprintf("plan step %s failed: %s", st.StepId, st.Reason)
		if step.GetOnFailure() == stewardv1.OnFailure_ON_FAILURE_COMPENSATE {
			id := r.stepEventID("plan.compensate", st.StepId, st.Attempts)
			if r.history.Has(id) {
				continue
			}
			err := r.d.host.Fail(ctx, taskID, id, reason)
			return true, err
		}
		// Once per failure: its attempt, and the version it failed under
		// (a changed step can fail before it starts again, at the same
		// attempt); a revision keeping the failed step moves neither.
		id := r.attemptEventID(event.TypeTaskNeedsInput, "failed", st.StepId, st.Attempts, strconv.FormatUint(uint64(st.EndedInVersion), 10))
		var last string
		if n := len(st.ActionIds); n > 0 {
			last = st.ActionIds[n-1]
		}
		if r.history.Has(id) || (last != "" && r.history.Has(event.ID(taskID, event.TypeTaskNeedsInput, "escalated", last))) {
			continue
		}
		return true, r.d.host.Write(ctx, taskID, func(t *stewardv1.Task) (*stewardv1.Event, error) {
			if t.Status != stewardv1.TaskStatus_TASK_STATUS_RUNNING {
				return nil, nil // stopped already, or waiting on a person for something else
			}
			return r.d.host.Event(r.meta(id), &stewardv1.TaskNeedsInput{
				Reason:   reason + "; resume the task to go on without it (the agent may then submit a revision that changes the step), or fail the task",
				Cause:    stewardv1.NeedsInputCause_NEEDS_INPUT_CAUSE_PLAN_STEP_FAILED,
				ActionId: last,
			})
		})
	}
	return false, nil
}

// foreachResult is the result of foreach step st: its items' results, in
// order (itemResults).
func (r *planPass) foreachResult(ctx context.Context, st *stewardv1.PlanStepState) (any, error) {
	return r.itemResults(ctx, st)
}
