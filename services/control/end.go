package control

import (
	"context"
	"errors"
	"slices"

	"github.com/steward-run/steward/pkg/errs"
	"github.com/steward-run/steward/pkg/event"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/requestid"
	"github.com/steward-run/steward/pkg/task"
)

// FailTask ends a task as failed. When the contract's recovery policy says
// compensate, or the request does, and the task has compensable actions
// (see compensable), the
// task compensates them first and fails when they have run (see
// compensate). A task already compensating is refused: it fails, or ends
// as it was going to, when its compensations end; CancelTask ends it at
// once. With a request id the call is idempotent.
func (p *Plane) FailTask(ctx context.Context, principal string, req *stewardv1.FailTaskRequest) (_ *stewardv1.Task, err error) {
	if err := checkCommand(req.TaskId, req.RequestId, req.Reason); err != nil {
		return nil, err
	}
	u, err := p.claimRequestID(ctx, principal, requestid.FailTask, req.TaskId, req.RequestId, req)
	if err != nil {
		return nil, err
	}
	defer u.settle(ctx, &err)
	id := u.id
	return p.end(ctx, principal, req.TaskId, id, req.RequestId, req.Reason, stewardv1.TaskStatus_TASK_STATUS_FAILED, req.Compensate)
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
	u, err := p.claimRequestID(ctx, principal, requestid.CancelTask, req.TaskId, req.RequestId, req)
	if err != nil {
		return nil, err
	}
	defer u.settle(ctx, &err)
	id := u.id
	return p.end(ctx, principal, req.TaskId, id, req.RequestId, req.Reason, stewardv1.TaskStatus_TASK_STATUS_CANCELLED, false)
}

// end ends a task as final (failed or cancelled), or starts compensating
// on the way there, under event id (see claimRequestID): when the contract says so,
// or undo does. Which actions to
// compensate depends on their tools, looked up before the conditional
// append; an action that succeeded since is looked up on another try.
func (p *Plane) end(ctx context.Context, principal, taskID, id, requestID, reason string, final stewardv1.TaskStatus, undo bool) (*stewardv1.Task, error) {
	for range maxEndTries {
		t, err := p.endOnce(ctx, principal, taskID, id, requestID, reason, final, undo)
		if errors.Is(err, errStale) {
			continue
		}
		if err != nil && id != "" && errs.Is(err, errs.FailedPrecondition) {
			// A repeat of a request that moved the task on may be refused by
			// where it moved the task to: compensating refuses a second fail.
			// If the request's event is on the log, the repeat succeeded.
			if t, history, lerr := p.tasks.Load(ctx, taskID); lerr == nil && history.Has(id) {
				return t, nil
			}
		}
		return t, err
	}
	return nil, errs.New(errs.Conflict, "task %s is changing too fast to end; try again", taskID)
}

// maxEndTries bounds how often end looks up tools again because an action
// succeeded while it did.
const maxEndTries = 8

// endOnce is one try of end: errStale when the task has a compensable
// action whose tool it did not look up.
func (p *Plane) endOnce(ctx context.Context, principal, taskID, id, requestID, reason string, final stewardv1.TaskStatus, asked bool) (*stewardv1.Task, error) {
	var undo undoers
	t, _, err := p.tasks.Load(ctx, taskID)
	if err != nil {
		return nil, err
	}
	if asked || compensates(t) {
		if undo, err = p.undoers(ctx, t); err != nil {
			return nil, err
		}
	}
	return p.apply(ctx, taskID, func(t *stewardv1.Task) (*stewardv1.Event, error) {
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
		case asked || compensates(t):
			ids, ok := compensable(t, undo)
			if !ok {
				return nil, errStale
			}
			if len(ids) > 0 {
				payload = &stewardv1.TaskCompensating{Reason: reason, FinalStatus: final, ActionIds: ids}
			}
		}
		return p.event(event.Meta{ID: id, TaskID: taskID, Actor: p.actor(principal), CorrelationID: requestID}, payload)
	})
}

// compensates reports whether t's recovery policy says to compensate.
func compensates(t *stewardv1.Task) bool {
	return t.Contract.GetRecoveryPolicy().GetMode() == stewardv1.RecoveryMode_RECOVERY_MODE_COMPENSATE
}

// undoers says, for the tool version (name@version) of each action that
// may need compensating, whether it names a compensating tool.
type undoers map[string]bool

// undoable reports whether a is an action to compensate if its tool
// names a compensating tool: it succeeded, is a reversible write, and is
// not itself a compensation.
func undoable(a *stewardv1.Action) bool {
	// A person's own work (task.Executor) made no call for a compensating
	// tool to undo: a person undoes it.
	return a.Status == stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED &&
		a.EffectClass == stewardv1.EffectClass_EFFECT_CLASS_REVERSIBLE_WRITE && a.Compensates == "" && !a.Carried && task.Executor(a) == ""
}

func toolVersion(a *stewardv1.Action) string { return a.Tool + "@" + a.ToolVersion }

// undoers looks up the tools of t's undoable actions. A tool that is not
// registered names no compensating tool: its actions cannot be undone.
func (p *Plane) undoers(ctx context.Context, t *stewardv1.Task) (undoers, error) {
	u := undoers{}
	for _, a := range t.Actions {
		if _, seen := u[toolVersion(a)]; seen || !undoable(a) {
			continue
		}
		if p.tools == nil {
			return nil, errs.New(errs.FailedPrecondition, "this control plane has no tool registry to find how to compensate action %s", a.ActionId)
		}
		entry, err := p.tools.Lookup(ctx, p.log, t.Tenant, a.Tool, a.ToolVersion)
		if errs.Is(err, errs.NotFound) {
			p.logger.Warn("tool of a succeeded action is not registered; it cannot be compensated", "task", t.Contract.GetTaskId(), "action", a.ActionId, "tool", a.Tool, "version", a.ToolVersion)
			u[toolVersion(a)] = false
			continue
		} else if err != nil {
			return nil, err
		}
		u[toolVersion(a)] = entry.Tool.Contract.CompensatingTool != ""
	}
	return u, nil
}

// compensable returns the actions of t to compensate, in the order to
// undo them: the reverse of the order they succeeded in (by outcome time,
// ties by ledger order). An action is compensable if it is undoable and
// its tool version names a compensating tool, as undo says; ok is false
// if undo does not know the tool of an undoable action.
func compensable(t *stewardv1.Task, undo undoers) (ids []string, ok bool) {
	type done struct {
		a     *stewardv1.Action
		index int
	}
	var found []done
	for i, a := range t.Actions {
		if !undoable(a) {
			continue
		}
		named, known := undo[toolVersion(a)]
		if !known {
			return nil, false
		}
		if named {
			found = append(found, done{a, i})
		}
	}
	slices.SortStableFunc(found, func(x, y done) int {
		if c := x.a.Outcome.GetFinishedAt().AsTime().Compare(y.a.Outcome.GetFinishedAt().AsTime()); c != 0 {
			return -c
		}
		return y.index - x.index
	})
	ids = make([]string, len(found))
	for i, d := range found {
		ids[i] = d.a.ActionId
	}
	return ids, true
}
