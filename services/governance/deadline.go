package governance

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/steward-run/steward/pkg/event"
	"github.com/steward-run/steward/pkg/eventlog"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/task"
	"github.com/steward-run/steward/pkg/timer"
)

// DeadlineTimerKind is the kind of the plane's deadline timers: one per
// deadline a task has had, taken by TimerConsumer with the approval
// timers.
const DeadlineTimerKind = "governance.deadline"

// deadlineTimer is a deadline timer's payload: which task, the deadline
// it was set for, and the event that set that deadline.
type deadlineTimer struct {
	TaskID   string    `json:"task_id"`
	Deadline time.Time `json:"deadline"`
	Cause    string    `json:"cause"`
}

// armDeadline reacts to a created task, or to its deadline extended, by
// setting a timer at the deadline. Each deadline has its own timer, so an
// extension does not cancel the earlier one: that one finds the deadline
// moved when it fires and does nothing. Setting it again on redelivery is
// a no-op.
func (ck *clock) armDeadline(ctx context.Context, rec *stewardv1.EventRecord) error {
	d := rec.Event.GetTaskCreated().GetContract().GetDeadline()
	if x := rec.Event.GetDeadlineExtended(); x != nil {
		d = x.Deadline
	}
	if d == nil {
		return nil
	}
	at := d.AsTime()
	payload, err := json.Marshal(deadlineTimer{TaskID: rec.Event.TaskId, Deadline: at, Cause: rec.Event.EventId})
	if err != nil {
		return err
	}
	if err := ck.timers.Set(ctx, DeadlineTimerKind, deadlineTimerID(rec.Event.TaskId, at), at, payload); err != nil {
		return fmt.Errorf("set the deadline timer of task %s: %w", rec.Event.TaskId, err)
	}
	return nil
}

// deadlineTimerID names the timer of one deadline of one task.
func deadlineTimerID(taskID string, at time.Time) string {
	return taskID + "/" + at.UTC().Format(time.RFC3339Nano)
}

// onTimer hands a fired timer to the handler of its kind.
func (ck *clock) onTimer(ctx context.Context, f timer.Fired) error {
	switch f.Kind {
	case DeadlineTimerKind:
		return ck.onDeadlineTimer(ctx, f)
	case AgentTimerKind:
		return ck.onAgentTimer(ctx, f)
	case StallTimerKind:
		return ck.onStallTimer(ctx, f)
	case InputTimerKind:
		return ck.onInputTimer(ctx, f)
	}
	return ck.onApprovalTimer(ctx, f)
}

// onDeadlineTimer suspends a task whose deadline came, if that is still
// its deadline and it is at work. The suspension's id derives from the
// task and the deadline, so a timer delivered twice suspends once.
func (ck *clock) onDeadlineTimer(ctx context.Context, f timer.Fired) error {
	var dt deadlineTimer
	if err := json.Unmarshal(f.Payload, &dt); err != nil || dt.TaskID == "" || dt.Deadline.IsZero() {
		ck.logger.Error("deadline timer with a bad payload; dropping it", "id", f.ID, "err", err)
		return nil
	}
	id := event.ID(dt.TaskID, "deadline-suspended", dt.Deadline.UTC().Format(time.RFC3339Nano))
	err := ck.suspendAtDeadline(ctx, dt.TaskID, id, dt.Cause, func(t *stewardv1.Task) bool {
		d := t.Contract.GetDeadline()
		return d != nil && d.AsTime().Equal(dt.Deadline) // not extended since
	})
	if err != nil && eventlog.Permanent(err) {
		ck.logger.Warn("deadline timer could not act", "task", dt.TaskID, "deadline", dt.Deadline, "err", err)
		return nil
	}
	return err
}

// suspendPastDeadline reacts to a task going back to work — resumed from
// a pause, for instance, or its result returned — by suspending it if its
// deadline has passed meanwhile: the timer found it held then and left
// it, and nothing else would stop it now.
func (ck *clock) suspendPastDeadline(ctx context.Context, rec *stewardv1.EventRecord) error {
	now := ck.now()
	return ck.suspendAtDeadline(ctx, rec.Event.TaskId, event.ID(rec.Event.EventId, "deadline-suspended"), rec.Event.EventId, func(t *stewardv1.Task) bool {
		return task.PastDeadline(t, now)
	})
}

// suspendAtDeadline records, under id, the suspension of a task at work
// whose deadline due says has come. A task that is paused, already
// suspended, waiting for input (it does nothing until a person answers,
// and a suspension would throw its question away), produced (its work is
// done; acceptance may take longer), compensating or ended is left as it
// is; answered or resumed past its deadline, it is suspended then.
func (ck *clock) suspendAtDeadline(ctx context.Context, taskID, id, cause string, due func(*stewardv1.Task) bool) error {
	var reason string
	err := ck.tasks.Write(ctx, taskID, func(t *stewardv1.Task) (*stewardv1.Event, error) {
		reason = ""
		if !task.Active(t.Status) || !due(t) {
			return nil, nil
		}
		c := t.Contract
		reason = fmt.Sprintf("its deadline %s has passed; its accountable owner %s may extend it (ExtendDeadline), then resume the task",
			c.GetDeadline().AsTime().UTC().Format(time.RFC3339), c.GetAccountableOwnerRef())
		return event.New(event.Meta{
			ID: id, TaskID: taskID, Actor: &stewardv1.Actor{Principal: "steward", Plane: PlaneName},
			Time: ck.now(), CausationID: cause,
		}, &stewardv1.TaskSuspended{Reason: reason, Cause: stewardv1.SuspendCause_SUSPEND_CAUSE_DEADLINE})
	})
	if err != nil || reason == "" {
		return err
	}
	ck.logger.Warn("task suspended: its deadline passed", "task", taskID, "reason", reason)
	return nil
}
