package control

import (
	"context"
	"slices"

	"github.com/steward-run/steward/pkg/errs"
	"github.com/steward-run/steward/pkg/event"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/task"
	"github.com/steward-run/steward/pkg/taskstore"
)

// FailTask ends a task as failed. When the contract's recovery policy says
// compensate and the task has compensable actions (see compensable), the
// task compensates them first and fails when they have run (see
// compensate). A task already compensating is refused: it fails, or ends
// as it was going to, when its compensations end; CancelTask ends it at
// once. With a request id the call is idempotent.
func (p *Plane) FailTask(ctx context.Context, principal string, req *stewardv1.FailTaskRequest) (_ *stewardv1.Task, err error) {
	if err := checkCommand(req.TaskId, req.RequestId, req.Reason); err != nil {
		return nil, err
	}
	u, err := p.claim(ctx, principal, "FailTask", req.TaskId, req.RequestId, req)
	if err != nil {
		return nil, err
	}
	defer u.settle(ctx, &err)
	id := u.id
	return p.end(ctx, principal, req.TaskId, id, req.RequestId, req.Reason, stewardv1.TaskStatus_TASK_STATUS_FAILED)
}

// CancelTask ends a task as cancelled, compensating first as FailTask
// does. Cancelling a task that is already compensating ends it as
// cancelled at once: the compensations still to run are abandoned (those
// in flight finish, and the ledger shows what was undone and what was
// not). That is the way out of a compensation that cannot finish. With a
// request id the call is idempotent.
func (p *Plane) CancelTask(ctx context.Context, principal string, req *stewardv1.CancelTaskRequest) (_ *stewardv1.Task, err error) {
	if err := checkCommand(req.TaskId, req.RequestId, req.Reason); err != nil {
		return nil, err
	}
	u, err := p.claim(ctx, principal, "CancelTask", req.TaskId, req.RequestId, req)
	if err != nil {
		return nil, err
	}
	defer u.settle(ctx, &err)
	id := u.id
	return p.end(ctx, principal, req.TaskId, id, req.RequestId, req.Reason, stewardv1.TaskStatus_TASK_STATUS_CANCELLED)
}

// end ends a task as final (failed or cancelled), or starts compensating
// on the way there, under event id (see claim).
func (p *Plane) end(ctx context.Context, principal, taskID, id, requestID, reason string, final stewardv1.TaskStatus) (*stewardv1.Task, error) {
	t, err := p.apply(ctx, taskID, func(t *stewardv1.Task) (*stewardv1.Event, error) {
		var payload event.Payload = &stewardv1.TaskCancelled{Reason: reason}
		if final == stewardv1.TaskStatus_TASK_STATUS_FAILED {
			payload = &stewardv1.TaskFailed{Reason: reason}
		}
		switch {
		case task.Terminal(t.Status):
			// The fold refuses it with the reason; a repeat of this very
			// request is found by its id first.
		case t.Status == stewardv1.TaskStatus_TASK_STATUS_COMPENSATING:
			if final == stewardv1.TaskStatus_TASK_STATUS_FAILED {
				return nil, errs.New(errs.FailedPrecondition, "task %s is compensating; it ends when its compensations have run (cancel it to end it now and abandon them)", taskID)
			}
		case t.Contract.GetRecoveryPolicy().GetMode() == stewardv1.RecoveryMode_RECOVERY_MODE_COMPENSATE:
			ids, err := p.compensable(ctx, t)
			if err != nil {
				return nil, err
			}
			if len(ids) > 0 {
				payload = &stewardv1.TaskCompensating{Reason: reason, FinalStatus: final, ActionIds: ids}
			}
		}
		return event.New(event.Meta{ID: id, TaskID: taskID, Actor: p.actor(principal), CorrelationID: requestID}, payload)
	})
	if err != nil && id != "" && errs.Is(err, errs.FailedPrecondition) {
		// A repeat of a request that moved the task on may be refused by
		// where it moved the task to: compensating refuses a second fail.
		// If the request's event is on the log, the repeat succeeded.
		if t, history, lerr := taskstore.Load(ctx, p.log, taskID); lerr == nil && history.Has(id) {
			return t, nil
		}
	}
	return t, err
}

// compensable returns the actions of t to compensate, in the order to
// undo them: the reverse of the order they succeeded in (by outcome time,
// ties by ledger order). An action is compensable if it succeeded, is a
// reversible write, is not itself a compensation, and its tool version
// names a compensating tool.
func (p *Plane) compensable(ctx context.Context, t *stewardv1.Task) ([]string, error) {
	type done struct {
		a     *stewardv1.Action
		index int
	}
	var found []done
	for i, a := range t.Actions {
		if a.Status != stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED ||
			a.EffectClass != stewardv1.EffectClass_EFFECT_CLASS_REVERSIBLE_WRITE || a.Compensates != "" {
			continue
		}
		if p.tools == nil {
			return nil, errs.New(errs.FailedPrecondition, "this control plane has no tool registry to find how to compensate action %s", a.ActionId)
		}
		entry, err := p.tools.Lookup(ctx, p.log, a.Tool, a.ToolVersion)
		if errs.Is(err, errs.NotFound) {
			p.logger.Warn("tool of a succeeded action is not registered; it cannot be compensated", "task", t.Contract.GetTaskId(), "action", a.ActionId, "tool", a.Tool, "version", a.ToolVersion)
			continue
		} else if err != nil {
			return nil, err
		}
		if entry.Tool.Contract.CompensatingTool != "" {
			found = append(found, done{a, i})
		}
	}
	slices.SortStableFunc(found, func(x, y done) int {
		if c := x.a.Outcome.GetFinishedAt().AsTime().Compare(y.a.Outcome.GetFinishedAt().AsTime()); c != 0 {
			return -c
		}
		return y.index - x.index
	})
	ids := make([]string, len(found))
	for i, d := range found {
		ids[i] = d.a.ActionId
	}
	return ids, nil
}
