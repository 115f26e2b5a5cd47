package control

import (
	"context"

	"github.com/steward-run/steward/pkg/errs"
	"github.com/steward-run/steward/pkg/event"
	"github.com/steward-run/steward/pkg/eventlog"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/requestid"
	"github.com/steward-run/steward/pkg/rpc"
	"github.com/steward-run/steward/pkg/task"
	"github.com/steward-run/steward/pkg/taskstore"
)

type eventPayload = event.Payload

// stewardPrincipal is who the events Steward appends on its own account
// name: starts, compensations, stops for help.
const stewardPrincipal = "steward"

// Apply records payload on taskID, under a random event id, if the task's
// state machine allows it now, and returns the task as it is after. An
// illegal transition is FailedPrecondition and appends nothing. Commands
// with a request id go through claimRequestID instead (see PauseTask).
func (p *Plane) Apply(ctx context.Context, principal, taskID string, payload event.Payload) (*stewardv1.Task, error) {
	return p.command(ctx, principal, taskID, "", "", payload)
}

// command records payload on taskID under event id (from claimRequestID; empty
// for a random one). A retry finds its event already folded and returns
// the task.
func (p *Plane) command(ctx context.Context, principal, taskID, id, requestID string, payload event.Payload) (*stewardv1.Task, error) {
	return p.apply(ctx, taskID, func(*stewardv1.Task) (*stewardv1.Event, error) {
		return p.event(event.Meta{ID: id, TaskID: taskID, Actor: p.actor(principal), CorrelationID: requestID}, payload)
	})
}

// PauseTask pauses a task. A task paused already is paused again only by
// one of its people or an operator, with tokens, over a pause of someone
// else's (mayRepause): the pause is then theirs, so that an agent that
// paused first cannot keep its owner's pause in its own hands. With a
// request id it is idempotent (see claimRequestID).
func (p *Plane) PauseTask(ctx context.Context, who rpc.Identity, req *stewardv1.PauseTaskRequest) (_ *stewardv1.Task, err error) {
	principal := who.Principal
	if err := checkCommand(req.TaskId, req.RequestId, req.Reason); err != nil {
		return nil, err
	}
	u, err := p.claimRequestID(ctx, principal, requestid.PauseTask, req.TaskId, req.RequestId, req)
	if err != nil {
		return nil, err
	}
	defer u.settle(ctx, &err)
	id := u.id
	if t, history, err := p.tasks.Load(ctx, req.TaskId); err == nil && id != "" && history.Has(id) {
		return t, nil // a retry of a recorded pause
	}
	return p.apply(ctx, req.TaskId, func(cur *stewardv1.Task) (*stewardv1.Event, error) {
		if cur.Status == stewardv1.TaskStatus_TASK_STATUS_PAUSED && !mayRepause(cur, who) {
			return nil, errs.New(errs.FailedPrecondition, "task %s is paused already, by %s", req.TaskId, pauserName(cur.PausedBy))
		}
		return p.event(event.Meta{ID: id, TaskID: req.TaskId, Actor: p.actor(principal), CorrelationID: req.RequestId}, &stewardv1.TaskPaused{Reason: req.Reason})
	})
}

// mayRepause reports whether who may take over t's pause: with tokens,
// one who may answer t (its requester, accountable owner or an
// operator), over a pause of someone else's.
func mayRepause(t *stewardv1.Task, who rpc.Identity) bool {
	return who.Verified && t.PausedBy != "" && t.PausedBy != who.Principal && mayAnswer(t, who) == nil
}

// ResumeTask resumes a paused, suspended or waiting task, except one that
// governance suspended because its budget is spent and that still is: it
// could not act, as no permit is issued past a spent budget, so only a
// raise resumes it (RaiseBudget does so by itself). Nor does it resume a
// task suspended at its deadline while the deadline has still passed: the
// accountable owner extends it first (ExtendDeadline). With tokens, a task
// waiting for input or paused by its people is resumed only by them or an
// operator (mayResume): the agent may not lift its own action cap, wave
// away its own escalation or undo its owner's pause. With a request id it
// is idempotent (see claimRequestID).
func (p *Plane) ResumeTask(ctx context.Context, who rpc.Identity, req *stewardv1.ResumeTaskRequest) (_ *stewardv1.Task, err error) {
	principal := who.Principal
	if err := checkCommand(req.TaskId, req.RequestId, req.Reason); err != nil {
		return nil, err
	}
	u, err := p.claimRequestID(ctx, principal, requestid.ResumeTask, req.TaskId, req.RequestId, req)
	if err != nil {
		return nil, err
	}
	defer u.settle(ctx, &err)
	id := u.id
	if t, history, err := p.tasks.Load(ctx, req.TaskId); err == nil && id != "" && history.Has(id) {
		return t, nil // a retry of a recorded resume, whatever the budget says now
	}
	now := p.now()
	return p.apply(ctx, req.TaskId, func(cur *stewardv1.Task) (*stewardv1.Event, error) {
		if err := stillSpent(cur); err != nil {
			return nil, err
		}
		if err := stillPastDeadline(cur, now); err != nil {
			return nil, err
		}
		if err := mayResume(cur, who); err != nil {
			return nil, err
		}
		return p.event(event.Meta{ID: id, TaskID: req.TaskId, Actor: p.actor(principal), CorrelationID: req.RequestId}, &stewardv1.TaskResumed{Reason: req.Reason})
	})
}

// mayResume refuses, with tokens, a resume that would let an agent undo
// what its people decided: a task waiting for input is resumed only by
// those who may answer it (mayAnswer), as is one suspended because its
// question waited too long; a paused one only by whoever
// paused it, or by those. An agent may still resume a task it paused
// itself.
func mayResume(t *stewardv1.Task, who rpc.Identity) error {
	if !who.Verified {
		return nil
	}
	switch {
	case t.Status == stewardv1.TaskStatus_TASK_STATUS_WAITING_FOR_INPUT, task.SuspendedForInput(t):
		return mayAnswer(t, who)
	case t.Status == stewardv1.TaskStatus_TASK_STATUS_PAUSED:
		if t.PausedBy == "" || t.PausedBy == who.Principal || mayAnswer(t, who) == nil {
			return nil
		}
		return errs.New(errs.PermissionDenied, "%s may not resume task %s: %s paused it; they, its requester %s, its accountable owner %s or an operator may",
			who.Principal, t.Contract.GetTaskId(), t.PausedBy, t.Contract.GetRequesterRef(), t.Contract.GetAccountableOwnerRef())
	}
	return nil
}

// checkCommand checks the fields every lifecycle command has.
func checkCommand(taskID, requestID, reason string) error {
	if taskID == "" {
		return errs.Field("task_id", "is required")
	}
	if !eventlog.ValidTaskID(taskID) {
		return errs.Field("task_id", "%s is not a task id: "+eventlog.TaskIDRule, errs.Quote(taskID))
	}
	if err := checkReason(reason); err != nil {
		return err
	}
	return checkText("request_id", requestID, MaxRequestID, false)
}

// apply records the event build decides on, if any, and returns the task
// after.
func (p *Plane) apply(ctx context.Context, taskID string, build taskstore.Build) (*stewardv1.Task, error) {
	return p.tasks.Update(ctx, taskID, build)
}

// write is apply for a caller that needs nothing back, which costs nothing
// in the size of the task.
func (p *Plane) write(ctx context.Context, taskID string, build taskstore.Build) error {
	return p.tasks.Write(ctx, taskID, build)
}

func (p *Plane) actor(principal string) *stewardv1.Actor {
	return &stewardv1.Actor{Principal: principal, Plane: PlaneName}
}
