package control

import (
	"context"
	"time"

	"github.com/steward-run/steward/pkg/errs"
	"github.com/steward-run/steward/pkg/event"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/taskstore"
)

// startWait bounds how long a command that needs a running task waits for
// one that is still pending. A task is pending from CreateTask until this
// plane's own reaction starts it: milliseconds on one server, longer on a
// cluster under load or while a stream leader is elected. A command that
// comes in that window — an agent proposing right after creating — waits
// rather than refusing what it would take a moment later; past the bound
// it is Unavailable, which clients retry (docs/errors.md).
const startWait = 5 * time.Second

// loadStarted is taskstore.LoadSince(…, 1) for a command that needs a
// running task: a pending task is read again, with a growing pause, until
// it has left pending or p.startWait has passed.
func (p *Plane) loadStarted(ctx context.Context, taskID string) (*stewardv1.Task, taskstore.History, error) {
	t, h, err := p.tasks.LoadSince(ctx, taskID, 1)
	if err != nil || t.Status != stewardv1.TaskStatus_TASK_STATUS_PENDING {
		return t, h, err
	}
	if p.startWaiting != nil {
		p.startWaiting(taskID)
	}
	give := time.NewTimer(p.startWait)
	defer give.Stop()
	pause := 5 * time.Millisecond
	wake := time.NewTimer(pause)
	defer wake.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil, nil, ctx.Err() // the caller's own deadline or cancellation
		case <-give.C:
			return nil, nil, errs.New(errs.Unavailable, "task %s has not started yet (it is pending); try again", taskID)
		case <-wake.C:
		}
		pause = min(2*pause, 200*time.Millisecond)
		wake.Reset(pause)
		if t, h, err = p.tasks.Load(ctx, taskID); err != nil || t.Status != stewardv1.TaskStatus_TASK_STATUS_PENDING {
			return t, h, err
		}
	}
}

// startIfPending starts a pending task. It is idempotent: the start event's
// id is derived from the task, so a redelivered cause finds the task
// already running (and does nothing) or, mid-retry, the same event stored.
func (p *Plane) startIfPending(ctx context.Context, rec *stewardv1.EventRecord) error {
	taskID := rec.Event.TaskId
	err := p.write(ctx, taskID, func(t *stewardv1.Task) (*stewardv1.Event, error) {
		if t.Status != stewardv1.TaskStatus_TASK_STATUS_PENDING {
			return nil, nil
		}
		return p.event(event.Meta{
			ID:            event.ID(taskID, event.TypeTaskStarted),
			TaskID:        taskID,
			Actor:         p.actor(stewardPrincipal),
			CausationID:   rec.Event.EventId,
			CorrelationID: rec.Event.CorrelationId,
		}, &stewardv1.TaskStarted{})
	})
	return err
}
