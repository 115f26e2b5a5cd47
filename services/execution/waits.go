package execution

import (
	"context"
	"encoding/json"
	"time"

	"github.com/steward-run/steward/pkg/errs"
	"github.com/steward-run/steward/pkg/eventlog"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/task"
	"github.com/steward-run/steward/pkg/timer"
)

// Timer kinds the execution plane owns.
const (
	// timerWait ends an action's wait: a retry backoff, an open breaker,
	// or the "now" of a settled not-accepted.
	timerWait = "execution.wait"
	// timerReconcile asks a tool's status query again about an unknown
	// outcome.
	timerReconcile = "execution.reconcile"
)

// timerNote is what an execution timer carries.
type timerNote struct {
	TaskID   string `json:"task_id"`
	ActionID string `json:"action_id"`
	// Attempt is the attempt the timer is about: the next one for a wait,
	// the unknown one for a reconciliation.
	Attempt uint32 `json:"attempt"`
	// Check counts status queries, for the reconciliation backoff.
	Check uint32 `json:"check,omitempty"`
	// Cause is the event the timer follows from.
	Cause       string `json:"cause"`
	Correlation string `json:"correlation,omitempty"`
}

// armWait reacts to an action starting to wait (ActionWaiting, or a settled
// "not accepted") by setting the durable timer that ends the wait. The
// timer's id is the event's, so a redelivery sets nothing twice; and since
// the timer is set by a reaction to the recorded wait, a crash between the
// two loses nothing.
func (wt *waits) armWait(ctx context.Context, rec *stewardv1.EventRecord) error {
	ev := rec.Event
	note := timerNote{TaskID: ev.TaskId, Cause: ev.EventId, Correlation: ev.CorrelationId}
	var until time.Time
	switch pl := ev.Payload.(type) {
	case *stewardv1.Event_ActionWaiting:
		note.ActionID, note.Attempt, until = pl.ActionWaiting.ActionId, pl.ActionWaiting.NextAttempt, pl.ActionWaiting.Until.AsTime()
	case *stewardv1.Event_ActionSettled:
		if pl.ActionSettled.State != stewardv1.SettleState_SETTLE_STATE_NOT_ACCEPTED {
			return nil
		}
		note.ActionID, until = pl.ActionSettled.ActionId, ev.Time.AsTime()
	default:
		return nil
	}
	return wt.setTimer(ctx, timerWait, ev.EventId, until, note)
}

func (wt *waits) setTimer(ctx context.Context, kind, id string, at time.Time, note timerNote) error {
	if wt.cfg.Timers == nil {
		return errs.New(errs.FailedPrecondition, "no timers configured: cannot wait until %s", at.Format(time.RFC3339))
	}
	body, err := json.Marshal(note)
	if err != nil {
		return err
	}
	return wt.cfg.Timers.Set(ctx, kind, id, at, body)
}

// fired reacts to an execution timer coming due.
func (wt *waits) fired(ctx context.Context, f timer.Fired) error {
	var note timerNote
	if err := json.Unmarshal(f.Payload, &note); err != nil {
		wt.logger.Error("execution timer with a bad payload; dropped", "kind", f.Kind, "id", f.ID, "err", err)
		return nil
	}
	c := cause{id: note.Cause, correlation: note.Correlation}
	var err error
	switch f.Kind {
	case timerWait:
		err = wt.endWait(ctx, note, c)
	case timerReconcile:
		err = wt.reconcile(ctx, note.TaskID, note.ActionID, note.Attempt, note.Check, c)
	}
	if eventlog.Permanent(err) {
		// Delivering the timer again cannot help; the stall watchdog
		// finds what is left waiting.
		wt.logger.Error("execution timer failed for good; dropped", "kind", f.Kind, "id", f.ID, "task", note.TaskID, "action", note.ActionID, "err", err)
		return nil
	}
	return err
}

// closeWaits reacts to a task's end: an ended task makes no more
// attempts, so each action waiting to retry, or for a breaker, is closed
// now (see attempt), with the cost of the calls it made, rather than left
// waiting for a timer that could find it only if it fired after the end.
func (wt *waits) closeWaits(ctx context.Context, rec *stewardv1.EventRecord) error {
	t, _, err := wt.tasks.Load(ctx, rec.Event.TaskId)
	if err != nil || !task.Terminal(t.Status) {
		return err
	}
	for _, a := range t.Actions {
		if a.Status != stewardv1.ActionStatus_ACTION_STATUS_WAITING {
			continue
		}
		if err := wt.attempt(ctx, rec.Event.TaskId, a.ActionId, nil, causeOf(rec)); err != nil {
			return err
		}
	}
	return nil
}

// endWait makes the attempt a wait was for, if the action still waits for
// it. A task that is stopped leaves it to the resume; a task that went on
// without it (a newer wait, an ended action) makes the timer moot.
func (wt *waits) endWait(ctx context.Context, note timerNote, c cause) error {
	t, _, err := wt.tasks.Load(ctx, note.TaskID)
	if errs.Is(err, errs.NotFound) {
		return nil
	} else if err != nil {
		return err
	}
	a := task.FindAction(t, note.ActionID)
	if a == nil {
		return nil
	}
	if a.Status == stewardv1.ActionStatus_ACTION_STATUS_DISPATCHED && (note.Attempt == 0 || a.Attempt == note.Attempt) {
		// This timer's attempt went out and its worker stopped during the
		// call: the timer is delivered again, the call is not (see hold).
		return wt.hold(ctx, note.TaskID, a, c)
	}
	if a.Status != stewardv1.ActionStatus_ACTION_STATUS_WAITING {
		return nil
	}
	if note.Attempt != 0 && a.Attempt+1 != note.Attempt {
		return nil
	}
	if left := a.WaitUntil.AsTime().Sub(wt.now()); left > time.Second {
		// A newer wait for the same attempt (the breaker still open):
		// its own timer ends it.
		return nil
	}
	return wt.attempt(ctx, note.TaskID, note.ActionID, nil, c)
}

// reconcileDelay is how long to wait before status query number check+1:
// doubling from a second to five minutes.
func reconcileDelay(check uint32) time.Duration {
	d := time.Second
	for i := uint32(1); i < check && d < 5*time.Minute; i++ {
		d *= 2
	}
	return min(d, 5*time.Minute)
}
