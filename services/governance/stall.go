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

// A stalled task is suspended when its mark stands (docs/stalls.md): the
// state plane's watchdog marks a task quiet past its bound, the planes
// re-drive what each owes it at once, and a timer here, at
// contract.timers.stall_suspend_after from the mark, suspends the task if
// nothing has moved it since (SUSPEND_CAUSE_STALLED). Any event clears the
// mark, so a re-drive that works, however late, leaves the task running;
// one that cannot (its plane down, its reaction failing, an agent that
// stopped) ends in a suspension a person sees and resumes.

// StallTimerKind is the kind of the plane's stall timers: one per mark.
const StallTimerKind = "governance.stall"

// DefaultStallSuspendAfter is how long a stall mark may stand before its
// task is suspended, when the contract does not say: the planes' re-drive
// takes milliseconds, and a plane that was down has had time to come back
// and take the mark from its durable consumer.
const DefaultStallSuspendAfter = 15 * time.Minute

// stallTimer is a stall timer's payload: the task, the mark, and the
// quiet point it marked, by which a later mark is told apart.
type stallTimer struct {
	TaskID     string    `json:"task_id"`
	Mark       string    `json:"mark"`
	QuietSince time.Time `json:"quiet_since"`
}

// stallSuspendAfter is c's stall_suspend_after; a missing or non-positive
// one means the default.
func stallSuspendAfter(c *stewardv1.TaskContract) time.Duration {
	if d := c.GetTimers().GetStallSuspendAfter(); d != nil && d.AsDuration() > 0 {
		return d.AsDuration()
	}
	return DefaultStallSuspendAfter
}

// armStall reacts to a stall mark by setting a timer at the task's
// stall_suspend_after from it, unless the task has moved on already.
// Setting it again on redelivery is a no-op.
func (ck *clock) armStall(ctx context.Context, rec *stewardv1.EventRecord) error {
	ev := rec.Event
	quiet := ev.GetTaskStalled().GetQuietSince()
	if quiet == nil {
		quiet = ev.Time // as the fold reads a mark without one
	}
	t, _, err := ck.tasks.LoadSince(ctx, ev.TaskId, rec.Sequence)
	if err != nil {
		return err
	}
	if !marked(t, quiet.AsTime(), ck.now()) {
		return nil // a re-drive, or anything else, moved it
	}
	payload, err := json.Marshal(stallTimer{TaskID: ev.TaskId, Mark: ev.EventId, QuietSince: quiet.AsTime()})
	if err != nil {
		return err
	}
	// Timers fire by the server's clock; the plane's says how far off the
	// suspension is (the same clock, but in a test that moves it on).
	due := ev.Time.AsTime().Add(stallSuspendAfter(t.Contract))
	if err := ck.timers.Set(ctx, StallTimerKind, ev.TaskId+"/"+ev.EventId, time.Now().Add(due.Sub(ck.now())), payload); err != nil {
		return fmt.Errorf("set the stall timer of task %s: %w", ev.TaskId, err)
	}
	return nil
}

// marked reports whether t is active and still carries the mark of the
// quiet spell that began at quiet: nothing has happened to it since. A
// plan that waits on a clock of its own (task.PlanWaitsDeclared) is no
// stall, whichever watchdog marked it.
func marked(t *stewardv1.Task, quiet, now time.Time) bool {
	return task.Active(t.Status) && t.StalledSince != nil && t.StalledSince.AsTime().Equal(quiet) && !task.PlanWaitsDeclared(t, now)
}

// onStallTimer suspends a task whose mark still stands. A task paused,
// waiting for input, compensating or ended is left alone (a suspension
// would undo what holds it); its next event clears the mark. The
// suspension's id derives from the mark, so a timer delivered twice
// suspends once.
func (ck *clock) onStallTimer(ctx context.Context, f timer.Fired) error {
	var st stallTimer
	if err := json.Unmarshal(f.Payload, &st); err != nil || st.TaskID == "" || st.Mark == "" {
		ck.logger.Error("stall timer with a bad payload; dropping it", "id", f.ID, "err", err)
		return nil
	}
	var reason string
	err := ck.tasks.Write(ctx, st.TaskID, func(t *stewardv1.Task) (*stewardv1.Event, error) {
		reason = ""
		if !marked(t, st.QuietSince, ck.now()) {
			return nil, nil
		}
		reason = task.Clip(fmt.Sprintf("stalled, and nothing moved it for %s after the mark: %s; resume the task (ResumeTask) and the planes re-drive it",
			shortDuration(stallSuspendAfter(t.Contract)), t.StalledReason))
		return event.New(event.Meta{
			ID: event.ID(st.TaskID, "stall-suspended", st.Mark), TaskID: st.TaskID, CausationID: st.Mark,
			Actor: &stewardv1.Actor{Principal: "steward", Plane: PlaneName}, Time: ck.now(),
		}, &stewardv1.TaskSuspended{Reason: reason, Cause: stewardv1.SuspendCause_SUSPEND_CAUSE_STALLED})
	})
	if err != nil && eventlog.Permanent(err) {
		ck.logger.Warn("stall timer could not act", "task", st.TaskID, "mark", st.Mark, "err", err)
		return nil
	}
	if err == nil && reason != "" {
		ck.logger.Warn("task suspended: it stalled and nothing moved it", "task", st.TaskID, "reason", reason)
	}
	return err
}
