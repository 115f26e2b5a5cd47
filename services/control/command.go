package control

import (
	"context"

	"github.com/steward-run/steward/pkg/errs"
	"github.com/steward-run/steward/pkg/event"
	"github.com/steward-run/steward/pkg/eventlog"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/task"
)

type eventPayload = event.Payload

// stewardPrincipal is who the events Steward appends on its own account
// name: starts, compensations, stops for help.
const stewardPrincipal = "steward"

// Apply records payload on taskID if the task's state machine allows it
// now, and returns the task as it is after. With a request id the command
// is idempotent: its event id derives from it, and a repeat finds the event
// already folded and returns the task. An illegal transition is
// FailedPrecondition and appends nothing.
func (p *Plane) Apply(ctx context.Context, principal, taskID, requestID string, payload event.Payload) (*stewardv1.Task, error) {
	id := commandID(taskID, requestID)
	return p.apply(ctx, taskID, func(*stewardv1.Task) (*stewardv1.Event, error) {
		return event.New(event.Meta{ID: id, TaskID: taskID, Actor: p.actor(principal), CorrelationID: requestID}, payload)
	})
}

// Resume resumes a paused, suspended or waiting task, except one that
// governance suspended because its budget is spent and that still is: it
// could not act, as no permit is issued past a spent budget, so only a
// raise resumes it (RaiseBudget does so by itself).
func (p *Plane) Resume(ctx context.Context, principal, taskID, requestID, reason string) (*stewardv1.Task, error) {
	id := commandID(taskID, requestID)
	if t, history, err := task.Load(ctx, p.log, taskID); err == nil && id != "" && history.Has(id) {
		return t, nil // a retry of a recorded resume, whatever the budget says now
	}
	return p.apply(ctx, taskID, func(cur *stewardv1.Task) (*stewardv1.Event, error) {
		if err := stillSpent(cur); err != nil {
			return nil, err
		}
		return event.New(event.Meta{ID: id, TaskID: taskID, Actor: p.actor(principal), CorrelationID: requestID}, &stewardv1.TaskResumed{Reason: reason})
	})
}

// commandID is the event id of a command with a request id, and empty (a
// random id) without one.
func commandID(taskID, requestID string) string {
	if requestID == "" {
		return ""
	}
	return event.ID(taskID, "command", requestID)
}

// checkCommand checks the fields every lifecycle command has.
func checkCommand(taskID, requestID, reason string) error {
	if taskID == "" {
		return errs.Field("task_id", "is required")
	}
	if !eventlog.ValidTaskID(taskID) {
		return errs.Field("task_id", "%s is not a task id", errs.Quote(taskID))
	}
	if err := checkReason(reason); err != nil {
		return err
	}
	return checkText("request_id", requestID, MaxRequestID, false)
}

func (p *Plane) apply(ctx context.Context, taskID string, build task.Build) (*stewardv1.Task, error) {
	return task.Update(ctx, p.log, taskID, build)
}

func (p *Plane) actor(principal string) *stewardv1.Actor {
	return &stewardv1.Actor{Principal: principal, Plane: PlaneName}
}
