package control

import (
	"context"

	"github.com/steward-run/steward/pkg/event"
	"github.com/steward-run/steward/pkg/eventlog"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// reactions are the control plane's durable reactions to the log. The
// compensation driver runs only on a plane that takes actions: it
// proposes some of its own.
func (p *Plane) reactions() eventlog.Reactions {
	r := eventlog.Reactions{
		event.TypeTaskCreated: p.startIfPending,
		// A task paused before it started goes back to pending on resume
		// and needs starting then.
		event.TypeTaskResumed:   p.startIfPending,
		event.TypeActionOutcome: p.guardLoop,
		event.TypeActionSettled: p.guardLoop,
		// A release to a task that has ended goes on to its parent.
		event.TypeBudgetReleased: p.passOn,
	}
	// Every event that may end a task, or close an action still out when
	// it ended (an outcome, a settlement, a denial on revalidation with the
	// cost of the calls made): a sub-task's end gives back to its parent
	// what it did not spend.
	for _, typ := range []string{event.TypeTaskCancelled, event.TypeTaskFailed, event.TypeTaskAccepted, event.TypeTaskProduced,
		event.TypeActionOutcome, event.TypeActionSettled, event.TypeActionDenied} {
		r[typ] = both(r[typ], p.release)
	}
	if p.tools != nil && p.requests != nil {
		// Every event that starts a compensation or may end one.
		for _, typ := range []string{event.TypeTaskCompensating, event.TypeActionOutcome, event.TypeActionSettled,
			event.TypeActionDenied, event.TypeApprovalDecided, event.TypeActionWithdrawn} {
			r[typ] = both(r[typ], p.compensate)
		}
	}
	return r
}

// both runs first (if any) and then second. Each is idempotent, so when
// either fails and the event comes again, running both again is safe.
func both(first, second eventlog.Handler) eventlog.Handler {
	if first == nil {
		return second
	}
	return func(ctx context.Context, rec *stewardv1.EventRecord) error {
		if err := first(ctx, rec); err != nil {
			return err
		}
		return second(ctx, rec)
	}
}

// startIfPending starts a pending task. It is idempotent: the start event's
// id is derived from the task, so a redelivered cause finds the task
// already running (and does nothing) or, mid-retry, the same event stored.
func (p *Plane) startIfPending(ctx context.Context, rec *stewardv1.EventRecord) error {
	taskID := rec.Event.TaskId
	_, err := p.apply(ctx, taskID, func(t *stewardv1.Task) (*stewardv1.Event, error) {
		if t.Status != stewardv1.TaskStatus_TASK_STATUS_PENDING {
			return nil, nil
		}
		return event.New(event.Meta{
			ID:            event.ID(taskID, event.TypeTaskStarted),
			TaskID:        taskID,
			Actor:         p.actor(stewardPrincipal),
			CausationID:   rec.Event.EventId,
			CorrelationID: rec.Event.CorrelationId,
		}, &stewardv1.TaskStarted{})
	})
	return err
}
