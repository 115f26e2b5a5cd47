package plandriver

import (
	"context"
	"fmt"
	"strconv"

	"github.com/steward-run/steward/pkg/errs"
	"github.com/steward-run/steward/pkg/event"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/plan"
	"github.com/steward-run/steward/pkg/task"
	"google.golang.org/protobuf/types/known/structpb"
)

// startReady starts every step of the plan that may start now
// (pkg/plan.Ready), in plan order: each is proposed before any of them
// ends, so independent steps run in parallel.
func (r *planPass) startReady(ctx context.Context) error {
	for _, id := range plan.Ready(r.t.Plan.Plan, task.StepStatuses(r.t.Plan)) {
		if err := r.start(ctx, id); err != nil {
			return err
		}
	}
	return nil
}

// start starts ready step id: its when false skips it; an expression that
// cannot be evaluated fails it; an action step proposes its action and
// records that the step runs it; a sub_task step records the id of the
// sub-task it runs, which the next pass delegates (followSubTasks).
func (r *planPass) start(ctx context.Context, id string) error {
	pl, step, st := r.t.Plan.Plan, r.definition(id), task.FindStep(r.t, id)
	outs, err := r.outcomes(ctx)
	if err != nil {
		return err
	}
	run, err := plan.EvalWhen(ctx, pl, id, plan.Bindings{Steps: outs})
	switch {
	case err != nil:
		return r.end(ctx, st, stewardv1.StepStatus_STEP_STATUS_FAILED, err.Error())
	case !run:
		return r.end(ctx, st, stewardv1.StepStatus_STEP_STATUS_SKIPPED, "its when was false: "+step.When)
	}
	return kindOf(step).start(r, ctx, st, step, outs)
}

// started records start, the next attempt of step st — its action, its
// items' actions, its sub-task (its items') or its wait's end — while the
// step still stands as read and its actions are on the log. Its
// sub-tasks are delegated once it is recorded (followSubTasks).
func (r *planPass) started(ctx context.Context, st *stewardv1.PlanStepState, start *stewardv1.PlanStepStarted) error {
	start.Version, start.StepId, start.Attempt = r.version(), st.StepId, st.Attempts+1
	id := r.stepEventID(event.TypePlanStepStarted, st.StepId, start.Attempt)
	actions := start.ItemActionIds
	if start.ActionId != "" {
		actions = []string{start.ActionId}
	}
	return r.d.host.Write(ctx, r.taskID(), func(t *stewardv1.Task) (*stewardv1.Event, error) {
		if !stands(t, start.Version, st) {
			return nil, nil
		}
		for _, a := range actions {
			if task.FindAction(t, a) == nil {
				return nil, nil
			}
		}
		return r.d.host.Event(r.meta(id), start)
	})
}

// stands reports whether step st, read under plan version v, still
// stands in t as read: the same version in force, the step as it was and
// at the same attempt. Every write of the driver about a step holds only
// while it does, so that a pass that read the task before another moved
// the step writes nothing.
func stands(t *stewardv1.Task, v uint32, st *stewardv1.PlanStepState) bool {
	cur := task.FindStep(t, st.StepId)
	return t.Plan.GetVersion() == v && cur != nil && cur.Status == st.Status && cur.Attempts == st.Attempts
}

// stillPending reports whether step st of plan version v still stands as
// read, to start, in a task whose plan may run.
func stillPending(t *stewardv1.Task, v uint32, st *stewardv1.PlanStepState) bool {
	return task.PlanMayRun(t) && stands(t, v, st) &&
		task.StepStatus(t.Plan, task.FindStep(t, st.StepId)) == stewardv1.StepStatus_STEP_STATUS_PENDING
}

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
		if !stands(t, v, st) {
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

// finish ends a plan whose steps are all done, as its ending says:
// PLAN_ENDING_PRODUCE marks the task produced, its criteria evaluated, as
// MarkProduced does, under an id derived from the plan version;
// PLAN_ENDING_HAND_BACK leaves the running task to its agent. A task that
// may not produce yet — an action of its own still under way — is left
// for the event that ends it to bring the driver back.
func (r *planPass) finish(ctx context.Context) error {
	statuses := task.StepStatuses(r.t.Plan)
	for _, s := range r.t.Plan.Plan.GetSteps() {
		if !plan.Done(s, statuses[s.GetId()]) {
			return nil
		}
	}
	if r.t.Plan.Plan.GetEnding() != stewardv1.PlanEnding_PLAN_ENDING_PRODUCE {
		return nil
	}
	id := event.ID(r.taskID(), event.TypeTaskProduced, "plan", strconv.FormatUint(uint64(r.version()), 10))
	err := r.d.host.Produce(ctx, r.taskID(), id)
	if errs.Is(err, errs.FailedPrecondition) {
		r.d.cfg.Logger.DebugContext(ctx, "finished plan not produced yet", "task", r.taskID(), "version", r.version(), "err", err)
		return nil
	}
	return err
}

// withdrawRetired withdraws the actions the plan no longer asks for
// (task.PlanWithdrew) and that have not been permitted yet: those of
// steps a revision withdrew or left behind, and their retries; and,
// while the plan in force is denied or rejected, those of its steps.
// Nobody should approve what the plan no longer asks. One permitted or
// further along runs on its permit, on the record (governance gives it
// no other); it stands for itself in progress.remaining.
func (d *Driver) withdrawRetired(ctx context.Context, t *stewardv1.Task) error {
	for _, a := range t.Actions {
		if !task.Withdrawable(a) {
			continue
		}
		why := task.PlanWithdrew(t, a)
		if why == "" {
			continue
		}
		taskID, w := t.Contract.GetTaskId(), &stewardv1.ActionWithdrawn{ActionId: a.ActionId, Reason: why}
		err := d.host.Write(ctx, taskID, func(t *stewardv1.Task) (*stewardv1.Event, error) {
			if cur := task.FindAction(t, w.ActionId); !task.Withdrawable(cur) || task.PlanWithdrew(t, cur) == "" {
				return nil, nil // permitted meanwhile, or asked for again
			}
			return d.host.Event(event.Meta{ID: event.ID(taskID, event.TypeActionWithdrawn, w.ActionId, ""), TaskID: taskID, Actor: d.host.Steward()}, w)
		})
		if err != nil {
			return err
		}
	}
	return nil
}
