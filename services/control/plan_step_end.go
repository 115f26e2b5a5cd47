package control

import (
	"context"
	"fmt"
	"strings"

	"github.com/steward-run/steward/pkg/event"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/plan"
	"github.com/steward-run/steward/pkg/task"
)

// endSteps ends each running step whose action has ended for good, or
// whose wait is over, and starts again each whose action the recovery
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
		if st.Status != stewardv1.StepStatus_STEP_STATUS_RUNNING || len(st.ActionIds) == 0 {
			continue
		}
		a := task.FindAction(r.t, st.ActionIds[len(st.ActionIds)-1])
		if a == nil {
			continue
		}
		did, err := r.follow(ctx, st, a)
		if err != nil {
			return moved, err
		}
		moved = moved || did
	}
	return moved, nil
}

// follow moves running step st on from its action a, if a has ended: a
// success whose result meets the step's expect succeeds the step, one
// that does not fails it (a validation failure of the step); a failure
// the recovery policy retries keeps the step running, on the retry; any
// other end fails it. An action still under way — awaiting approval,
// dispatched, unknown until settled — leaves the step running.
func (r *planPass) follow(ctx context.Context, st *stewardv1.PlanStepState, a *stewardv1.Action) (bool, error) {
	failed := stewardv1.StepStatus_STEP_STATUS_FAILED
	switch a.Status {
	case stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED:
		return true, r.judge(ctx, st, a)
	case stewardv1.ActionStatus_ACTION_STATUS_FAILED:
		if retry := task.FindAction(r.t, retryID(r.t, a)); retry != nil {
			return true, r.started(ctx, st, retry.ActionId, nil, st.Attempts+1)
		}
		if r.p.retryDue(r.t, a) {
			return false, nil // the recovery policy proposes it again; its proposal's end brings us back
		}
		class := strings.ReplaceAll(strings.ToLower(strings.TrimPrefix(a.Outcome.GetFailureClass().String(), "FAILURE_CLASS_")), "_", " ")
		return true, r.end(ctx, st, failed, fmt.Sprintf("action %s failed (%s): %s", a.ActionId, class, clip(a.Outcome.GetReason())))
	case stewardv1.ActionStatus_ACTION_STATUS_DENIED, stewardv1.ActionStatus_ACTION_STATUS_REJECTED, stewardv1.ActionStatus_ACTION_STATUS_WITHDRAWN:
		why := a.Outcome.GetReason()
		if why == "" {
			why = strings.Join(a.Snapshot.GetReasons(), "; ")
		}
		return true, r.end(ctx, st, failed, fmt.Sprintf("action %s was %s: %s", a.ActionId, task.ActionStatusName(a.Status), clip(why)))
	}
	return false, nil
}

// judge ends step st, whose action a succeeded, by its expect over a's
// result: false, or an error, fails it.
func (r *planPass) judge(ctx context.Context, st *stewardv1.PlanStepState, a *stewardv1.Action) error {
	step := r.definition(st.StepId)
	if step.GetExpect() == "" {
		return r.end(ctx, st, stewardv1.StepStatus_STEP_STATUS_SUCCEEDED, "")
	}
	result, err := r.p.resultValue(ctx, a)
	if err != nil {
		return err
	}
	outs, err := r.outcomes(ctx)
	if err != nil {
		return err
	}
	ok, err := plan.EvalExpect(ctx, r.t.Plan.Plan, st.StepId, plan.Bindings{Steps: outs, Result: result})
	switch {
	case err != nil:
		return r.end(ctx, st, stewardv1.StepStatus_STEP_STATUS_FAILED, "validation failure: "+err.Error())
	case !ok:
		return r.end(ctx, st, stewardv1.StepStatus_STEP_STATUS_FAILED, fmt.Sprintf("validation failure: action %s succeeded but its result does not meet expect %s", a.ActionId, step.GetExpect()))
	}
	return r.end(ctx, st, stewardv1.StepStatus_STEP_STATUS_SUCCEEDED, "")
}

// end records that step st ended as status, while it still stands as
// read.
func (r *planPass) end(ctx context.Context, st *stewardv1.PlanStepState, status stewardv1.StepStatus, reason string) error {
	v := r.version()
	id := r.stepEventID(event.TypePlanStepEnded, st.StepId, st.Attempts)
	return r.p.write(ctx, r.taskID(), func(t *stewardv1.Task) (*stewardv1.Event, error) {
		cur := task.FindStep(t, st.StepId)
		if t.Plan.GetVersion() != v || cur == nil || cur.Status != st.Status || cur.Attempts != st.Attempts {
			return nil, nil
		}
		return r.p.event(r.meta(id), &stewardv1.PlanStepEnded{Version: v, StepId: st.StepId, Status: status, Reason: clip(reason)})
	})
}

// stopOnFailure applies the on_failure of each failed step that stops the
// plan, once: escalate makes the task wait for a person's input (cause
// NEEDS_INPUT_CAUSE_PLAN_STEP_FAILED); compensate fails the task with
// compensation, as FailTask with compensate does. Each event's id derives
// from the step, so a person's resume is not undone by a redelivery. A
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
			_, err := r.p.end(ctx, stewardPrincipal, taskID, id, "", reason, stewardv1.TaskStatus_TASK_STATUS_FAILED, true)
			return true, err
		}
		id := r.stepEventID(event.TypeTaskNeedsInput, st.StepId, st.Attempts)
		var last string
		if n := len(st.ActionIds); n > 0 {
			last = st.ActionIds[n-1]
		}
		if r.history.Has(id) || (last != "" && r.history.Has(event.ID(taskID, event.TypeTaskNeedsInput, "escalated", last))) {
			continue
		}
		return true, r.p.write(ctx, taskID, func(t *stewardv1.Task) (*stewardv1.Event, error) {
			if t.Status != stewardv1.TaskStatus_TASK_STATUS_RUNNING {
				return nil, nil // stopped already, or waiting on a person for something else
			}
			return r.p.event(r.meta(id), &stewardv1.TaskNeedsInput{
				Reason:   reason + "; resume the task to go on without it, submit a revision of the plan, or fail the task",
				Cause:    stewardv1.NeedsInputCause_NEEDS_INPUT_CAUSE_PLAN_STEP_FAILED,
				ActionId: last,
			})
		})
	}
	return false, nil
}
