package control

import (
	"context"
	"errors"

	"google.golang.org/protobuf/proto"

	"github.com/steward-run/steward/pkg/errs"
	"github.com/steward-run/steward/pkg/event"
	"github.com/steward-run/steward/pkg/eventlog"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/task"
)

type eventPayload = event.Payload

// maxConflictRetries bounds how often a command re-reads after losing a
// race for the task's next sequence.
const maxConflictRetries = 8

// load reads and folds a task; a task with no events is NotFound.
func (p *Plane) load(ctx context.Context, taskID string) (*stewardv1.Task, error) {
	recs, err := p.log.Read(ctx, taskID)
	if err != nil {
		return nil, err
	}
	if len(recs) == 0 {
		return nil, errs.New(errs.NotFound, "task %s not found", taskID)
	}
	return task.Fold(recs)
}

// Apply records payload on taskID if the task's state machine allows it
// now, and returns the task as it is after. meta fills the envelope; its
// TaskID is set here. An illegal transition is FailedPrecondition and
// appends nothing.
func (p *Plane) Apply(ctx context.Context, principal, taskID string, payload eventPayload) (*stewardv1.Task, error) {
	return p.apply(ctx, taskID, func(*stewardv1.Task) (*stewardv1.Event, error) {
		return event.New(event.Meta{TaskID: taskID, Actor: p.actor(principal)}, payload)
	})
}

// apply is the command loop: fold, build the event, dry-run it through the
// fold, append conditionally; on a conflict, start over. build may return
// nil to say there is nothing to do, and apply then returns the task as is.
func (p *Plane) apply(ctx context.Context, taskID string, build func(*stewardv1.Task) (*stewardv1.Event, error)) (*stewardv1.Task, error) {
	for range maxConflictRetries {
		t, err := p.load(ctx, taskID)
		if err != nil {
			return nil, err
		}
		ev, err := build(t)
		if err != nil || ev == nil {
			return t, err
		}
		if err := task.Apply(proto.CloneOf(t), ev, 0); err != nil {
			return nil, err
		}
		rec, err := p.log.Append(ctx, eventlog.HeadOf(t), ev)
		if errors.Is(err, eventlog.ErrConflict) {
			continue
		}
		if err != nil {
			return nil, err
		}
		if rec.Event != ev {
			// A retried append that was stored before: the task has moved
			// on from t, so read it afresh.
			return p.load(ctx, taskID)
		}
		if err := task.Apply(t, rec.Event, rec.Sequence); err != nil {
			return nil, err
		}
		return t, nil
	}
	return nil, errs.New(errs.Conflict, "task %s is changing too fast; try again", taskID)
}

func (p *Plane) actor(principal string) *stewardv1.Actor {
	return &stewardv1.Actor{Principal: principal, Plane: PlaneName}
}
