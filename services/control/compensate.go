package control

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/steward-run/steward/pkg/errs"
	"github.com/steward-run/steward/pkg/event"
	"github.com/steward-run/steward/pkg/eventlog"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/task"
)

// compensationPrefix starts the proposal id of every compensation. With
// the id of the action it undoes it makes the compensation's action id
// deterministic, so that a redelivered event proposes it once; clients may
// not use the prefix (validateProposal), so no proposal of theirs can take
// that id first.
const compensationPrefix = "compensate-"

// compensate drives a compensating task one action at a time, in the order
// its TaskCompensating event listed them: it proposes the compensation of
// the first action still to undo and waits while that runs (governance may
// ask for approval; execution retries). When the compensation has ended,
// however it ended, the fold drops the action from the list, and the event
// that ended it brings the driver back to propose the next. With nothing
// left it ends the task as failed or cancelled, as the compensation was
// started for, saying how the compensations went.
//
// It reacts to every event that starts a compensation or may end one, and
// is idempotent: the compensation's action id and the final event's id
// derive from the task, so a redelivery appends nothing twice.
func (r *recovery) compensate(ctx context.Context, rec *stewardv1.EventRecord) error {
	var compensating bool
	err := r.tasks.Peek(ctx, rec.Event.TaskId, rec.Sequence, func(t *stewardv1.Task) {
		compensating = t.Status == stewardv1.TaskStatus_TASK_STATUS_COMPENSATING
	})
	if err != nil || !compensating {
		return err // most tasks never compensate: no copy of the task for them
	}
	t, _, err := r.tasks.LoadSince(ctx, rec.Event.TaskId, rec.Sequence)
	if err != nil || t.Status != stewardv1.TaskStatus_TASK_STATUS_COMPENSATING {
		return err
	}
	if len(t.Compensations) == 0 {
		if inFlight(t) {
			// A call of the task's own may still succeed, and then
			// needs undoing too (the fold lists it): wait for its end.
			return nil
		}
		return r.finishCompensation(ctx, rec, "")
	}
	head := t.Compensations[0]
	for _, a := range t.Actions {
		if a.Compensates == head {
			return nil // under way: the event that ends it brings us back
		}
	}
	err = r.proposeCompensation(ctx, rec, t, head)
	if err != nil && eventlog.Permanent(err) {
		// A redelivery would meet the same refusal: end the task now,
		// saying what was and was not undone, rather than loop.
		return r.finishCompensation(ctx, rec, fmt.Sprintf("could not propose the compensation of %s: %v", head, err))
	}
	return err
}

// proposeCompensation proposes the call that undoes action head of t: the
// latest version of its tool's compensating tool, on the same target (see
// compensationParams for its parameters).
func (r *recovery) proposeCompensation(ctx context.Context, rec *stewardv1.EventRecord, t *stewardv1.Task, head string) error {
	taskID := t.Contract.GetTaskId()
	orig := task.FindAction(t, head)
	if orig == nil {
		return errs.New(errs.FailedPrecondition, "task %s has no action %s", taskID, head)
	}
	entry, err := r.tools.Lookup(ctx, r.log, t.Tenant, orig.Tool, orig.ToolVersion)
	if err != nil {
		return err
	}
	undo := entry.Tool.Contract.CompensatingTool
	if undo == "" {
		return errs.New(errs.FailedPrecondition, "tool %s@%s names no compensating tool", orig.Tool, orig.ToolVersion)
	}
	params, err := r.compensationParams(ctx, orig)
	if err != nil {
		return err
	}
	d, err := r.plane.prepare(ctx, t, proposal{
		taskID: taskID, proposalID: compensationPrefix + head,
		tool: undo, target: orig.Target, params: params,
		compensates: head, principal: stewardPrincipal, milestone: orig.MilestoneId,
	})
	if err != nil {
		return err
	}
	d.action.SealedSecrets = carrySealed(d.action.SealedSecrets, orig.SealedSecrets)
	_, existing, _, err := r.plane.record(ctx, taskID, d, rec.Event.EventId, func(t *stewardv1.Task) (bool, error) {
		// Only while head is still the next to undo: a cancel may have
		// ended the compensation since the task was read.
		return t.Status == stewardv1.TaskStatus_TASK_STATUS_COMPENSATING && len(t.Compensations) > 0 && t.Compensations[0] == head, nil
	})
	if err == nil && existing != nil && existing.Compensates != head {
		return errs.New(errs.FailedPrecondition, "action %s, the id of the compensation of %s, is taken by another action", existing.ActionId, head)
	}
	return err
}

// compensationParams are the parameters of the compensation of orig: the
// JSON object
//
//	{"action_id": …, "op_key": …, "target": …, "params": {…}, "result": …}
//
// naming the call to undo, its idempotency key, target and parameters (from
// its request), and its result (null when it returned none): what a
// compensating tool needs to find and undo the effect. Secret parameters
// stay commitments here; the compensation carries their sealed values
// (carrySealed), and the compensating tool receives them in clear.
func (r *recovery) compensationParams(ctx context.Context, orig *stewardv1.Action) ([]byte, error) {
	params, err := r.paramsOf(ctx, orig)
	if err != nil {
		return nil, err
	}
	result, err := r.resultJSON(ctx, orig)
	if err != nil {
		return nil, err
	}
	return json.Marshal(map[string]any{
		"action_id": orig.ActionId,
		"op_key":    orig.OpKey,
		"target":    orig.Target,
		"params":    params,
		"result":    result,
	})
}

// resultJSON is a's result as JSON: null when it returned none, and a
// JSON string holding a result that is not JSON (the tool protocol asks
// for a JSON body; anything else is passed on as text rather than
// refused). It reads the results store, which it waits (retrying) for if
// this plane was wired without one.
func (r *recovery) resultJSON(ctx context.Context, a *stewardv1.Action) (json.RawMessage, error) {
	o := a.GetOutcome()
	if o.GetResultRef() == "" && len(o.GetResult()) == 0 {
		return json.RawMessage("null"), nil
	}
	if r.results == nil && len(o.GetResult()) == 0 {
		// A wiring mistake, not the task's: wait for a plane that can
		// read results rather than go on without one.
		return nil, errs.New(errs.Unavailable, "this control plane has no results store to read the result of action %s", a.ActionId)
	}
	result, err := r.results.Result(ctx, o.Result, o.ResultRef, o.ResultHash)
	if err != nil {
		return nil, err
	}
	if !json.Valid(result) {
		text, _ := json.Marshal(string(result))
		result = text
	}
	return result, nil
}

// finishCompensation ends a compensating task as the compensation was
// started for, once nothing is left to undo, or at once when stopped says
// why the rest cannot be undone.
func (r *recovery) finishCompensation(ctx context.Context, rec *stewardv1.EventRecord, stopped string) error {
	taskID := rec.Event.TaskId
	err := r.plane.write(ctx, taskID, func(t *stewardv1.Task) (*stewardv1.Event, error) {
		if t.Status != stewardv1.TaskStatus_TASK_STATUS_COMPENSATING || (stopped == "" && len(t.Compensations) > 0) {
			return nil, nil
		}
		reason := compensationReport(t, stopped)
		var payload event.Payload = &stewardv1.TaskFailed{Reason: reason}
		if t.FinalStatus == stewardv1.TaskStatus_TASK_STATUS_CANCELLED {
			payload = &stewardv1.TaskCancelled{Reason: reason}
		}
		return r.plane.event(event.Meta{
			ID:            event.ID(taskID, "compensated"),
			TaskID:        taskID,
			Actor:         r.plane.actor(stewardPrincipal),
			CausationID:   rec.Event.EventId,
			CorrelationID: rec.Event.CorrelationId,
		}, payload)
	})
	return err
}

// inFlight reports whether an action of t's own (not a compensation) has a
// call out whose end is not known yet — dispatched, or unknown until it is
// settled — or a person at work on it, who settles it yet. Nothing else of
// the task's own starts while it compensates.
func inFlight(t *stewardv1.Task) bool {
	for _, a := range t.Actions {
		switch a.Status {
		case stewardv1.ActionStatus_ACTION_STATUS_DISPATCHED, stewardv1.ActionStatus_ACTION_STATUS_UNKNOWN,
			stewardv1.ActionStatus_ACTION_STATUS_PERSON_EXECUTING: // a person at work settles it yet
			if a.Compensates == "" {
				return true
			}
		}
	}
	return false
}
