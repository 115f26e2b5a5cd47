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

// load reads and folds a task; a task with no events is NotFound. It also
// returns the ids of the events folded, for spotting a command's retry.
func (p *Plane) load(ctx context.Context, taskID string) (*stewardv1.Task, map[string]bool, error) {
	recs, err := p.log.Read(ctx, taskID)
	if err != nil {
		return nil, nil, err
	}
	if len(recs) == 0 {
		return nil, nil, errs.New(errs.NotFound, "task %s not found", taskID)
	}
	t, err := task.Fold(recs)
	if err != nil {
		return nil, nil, errs.Wrap(errs.Corrupt, err, "task %s", taskID)
	}
	ids := make(map[string]bool, len(recs))
	for _, r := range recs {
		ids[r.Event.EventId] = true
	}
	return t, ids, nil
}

// Apply records payload on taskID if the task's state machine allows it
// now, and returns the task as it is after. With a request id the command
// is idempotent: its event id derives from it, and a repeat finds the event
// already folded and returns the task. An illegal transition is
// FailedPrecondition and appends nothing.
func (p *Plane) Apply(ctx context.Context, principal, taskID, requestID string, payload event.Payload) (*stewardv1.Task, error) {
	id := ""
	if requestID != "" {
		id = event.ID(taskID, "command", requestID)
	}
	return p.apply(ctx, taskID, func(*stewardv1.Task) (*stewardv1.Event, error) {
		return event.New(event.Meta{ID: id, TaskID: taskID, Actor: p.actor(principal), CorrelationID: requestID}, payload)
	})
}

// apply is the command loop: fold, build the event, dry-run it through the
// fold, append conditionally; on a conflict, start over. build may return
// nil to say there is nothing to do; apply then returns the task as is, as
// it does when the built event is already in the task's history.
func (p *Plane) apply(ctx context.Context, taskID string, build func(*stewardv1.Task) (*stewardv1.Event, error)) (*stewardv1.Task, error) {
	for range maxConflictRetries {
		t, folded, err := p.load(ctx, taskID)
		if err != nil {
			return nil, err
		}
		ev, err := build(t)
		if err != nil || ev == nil || folded[ev.EventId] {
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
			t, _, err := p.load(ctx, taskID)
			return t, err
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
