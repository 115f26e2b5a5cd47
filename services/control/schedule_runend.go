package control

import (
	"context"
	"errors"

	"github.com/steward-run/steward/pkg/errs"
	"github.com/steward-run/steward/pkg/event"
	"github.com/steward-run/steward/pkg/eventlog"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/schedule"
	"github.com/steward-run/steward/pkg/task"
)

// How a run ended is recorded on its schedule (schedule.run_ended), so
// that the schedule's view says it and its owner hears of a failure
// (notify's schedule.run_failed). The record's id derives from the
// schedule and the run: a redelivered end, or two control planes seeing
// it, record it once — the chain is read for the id first, since the
// log's own dedupe is only a window. A run no firing of the schedule
// names (an orphan, cancelled because another tick recorded its firing
// otherwise) is not the schedule's and is not recorded.

// recordRunEnd records on run's schedule how the run, whose events are
// recs, ended; nothing while it has not (produced, awaiting review).
func (p *schedules) recordRunEnd(ctx context.Context, recs []*stewardv1.EventRecord, run *stewardv1.ScheduleRun) error {
	t, err := task.Fold(recs)
	if err != nil {
		return err
	}
	end := runEnd(t, recs, run)
	if end == nil {
		return nil
	}
	id := schedule.RunEndedEventID(run.ScheduleId, end.TaskId)
	for range maxScheduleTries {
		l, err := p.loadSchedule(ctx, run.ScheduleId)
		if errs.Is(err, errs.NotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		// Only an event stored since the run was made can name it or
		// record its end: read those, not the whole chain.
		since, err := p.log.ReadScheduleAfter(ctx, run.ScheduleId, recs[0].Sequence)
		if err != nil {
			return err
		}
		named := false
		for _, r := range since {
			if r.Event.EventId == id {
				return nil
			}
			named = named || namesRun(r.Event, end.TaskId)
		}
		s := l.s
		if !named {
			if firingPending(s, run) {
				return errs.New(errs.Unavailable, "run %s ended before schedule %s recorded its firing", end.TaskId, s.ScheduleId)
			}
			return nil // an orphan
		}
		if end.Superseded && supersedingPending(s, end.TaskId) {
			// Recorded now, the end would move the chain's head under the
			// firing that cancelled the run, which would then be decided
			// again and recorded STARTED, not CANCELLED_PREVIOUS.
			return errs.New(errs.Unavailable, "run %s was cancelled by a firing schedule %s has yet to record", end.TaskId, s.ScheduleId)
		}
		ev, err := p.event(event.Meta{ID: id, TaskID: s.ScheduleId, Actor: p.actor(s.Creator), CausationID: recs[len(recs)-1].Event.EventId},
			&stewardv1.ScheduleRunEnded{End: end})
		if err != nil {
			return err
		}
		if _, err = p.log.Append(ctx, l.head, ev); !errors.Is(err, eventlog.ErrConflict) {
			return err
		}
	}
	return errs.New(errs.Conflict, "schedule %s kept changing while the end of run %s was recorded", run.ScheduleId, t.Contract.GetTaskId())
}

// runEnd is how run t (of events recs) ended, or nil if it has not.
func runEnd(t *stewardv1.Task, recs []*stewardv1.EventRecord, run *stewardv1.ScheduleRun) *stewardv1.ScheduleRunEnd {
	end := &stewardv1.ScheduleRunEnd{TaskId: t.Contract.GetTaskId(), FiringTime: run.FiringTime}
	switch t.Status {
	case stewardv1.TaskStatus_TASK_STATUS_ACCEPTED:
		end.Outcome = stewardv1.RunOutcome_RUN_OUTCOME_ACCEPTED
	case stewardv1.TaskStatus_TASK_STATUS_FAILED:
		end.Outcome = stewardv1.RunOutcome_RUN_OUTCOME_FAILED
	case stewardv1.TaskStatus_TASK_STATUS_CANCELLED:
		end.Outcome = stewardv1.RunOutcome_RUN_OUTCOME_CANCELLED
	default:
		return nil
	}
	// cancelRun's id, on the cancellation or on the compensation before it.
	superseding := event.ID(run.ScheduleId, "cancel_previous", end.TaskId)
	for i := len(recs) - 1; i >= 0; i-- {
		ev := recs[i].Event
		if end.EndedAt == nil && task.Ends(ev) {
			end.EndedAt = ev.Time
			end.Reason = ev.GetTaskFailed().GetReason() + ev.GetTaskCancelled().GetReason()
		}
		end.Superseded = end.Superseded || ev.EventId == superseding
	}
	return end
}

// firingPending reports whether s has yet to record run's firing: still
// due on an active schedule, or still queued on one not deleted. A due
// firing is recorded by no tick of a paused or deleted schedule (a
// resumption skips what came meanwhile), a queued one by none of a
// deleted one: a tick cut off between making the run and recording it
// left an orphan, whose end would otherwise be tried again without end.
func firingPending(s *stewardv1.Schedule, run *stewardv1.ScheduleRun) bool {
	at := run.GetFiringTime().AsTime()
	switch s.Status {
	case stewardv1.ScheduleStatus_SCHEDULE_STATUS_DELETED:
		return false
	case stewardv1.ScheduleStatus_SCHEDULE_STATUS_ACTIVE:
		if s.GetDueAfter().AsTime().Before(at) {
			return true
		}
	}
	for _, q := range s.Queued {
		if q.AsTime().Equal(at) {
			return true
		}
	}
	return false
}

// supersedingPending reports whether s has yet to record the firing that
// cancelled its run taskID: the run is still its latest, no firing names
// it cancelled, and the schedule is active (a pause or deletion may have
// stopped that firing's record for good).
func supersedingPending(s *stewardv1.Schedule, taskID string) bool {
	if s.Status != stewardv1.ScheduleStatus_SCHEDULE_STATUS_ACTIVE || s.LastTaskId != taskID {
		return false
	}
	for _, f := range s.RecentFirings {
		if f.CancelledTaskId == taskID {
			return false
		}
	}
	return true
}
