package control

import (
	"context"
	"errors"
	"slices"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/steward-run/steward/pkg/errs"
	"github.com/steward-run/steward/pkg/event"
	"github.com/steward-run/steward/pkg/eventlog"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/schedule"
	"github.com/steward-run/steward/pkg/task"
	"github.com/steward-run/steward/pkg/timer"
)

// The firing engine. Each firing is a durable timer (pkg/timer) of kind
// ScheduleTimerKind, id "<schedule>/<firing time>", set before the write
// that makes it due (the creation, a resumption, the tick before it), so
// that it fires once across restarts and replicas. Its handler ticks the
// schedule: it decides (schedule.Decide) with the plane's clock, does one
// decision's side effect — cancel the previous run, create the run as a
// task whose id derives from the schedule and the firing — then records
// it with an event id derived from the same, conditionally on the
// schedule's head; and again, until nothing is left to decide; then it
// sets the next firing's timer. A redelivered timer, a second replica or
// a crash between the side effect and the record makes the same task and
// the same record, which the log keeps once.

// ScheduleTimerKind is the kind of the timers that fire schedules;
// ScheduleConsumer is the consumer that runs them.
const (
	ScheduleTimerKind = "control.schedule"
	ScheduleConsumer  = "control-schedules"
)

// maxTickSteps bounds the decisions one tick records before it gives up
// (and the timer is delivered again): a queued start, a MISSED record and
// at most schedule.MaxCatchUp firings, plus conflicts.
const maxTickSteps = schedule.MaxCatchUp + 16

// setFiringTimer sets the timer of schedule id's firing at at; nothing for
// the zero time (no firing).
func (p *schedules) setFiringTimer(ctx context.Context, id string, at time.Time) error {
	if at.IsZero() {
		return nil
	}
	if p.timers == nil {
		return errs.New(errs.Unavailable, "this control plane has no timers to fire schedule %s", id)
	}
	return p.timers.Set(ctx, ScheduleTimerKind, id+"/"+at.UTC().Format(time.RFC3339Nano), at, []byte(id))
}

// onScheduleTimer is a schedule's timer. The timer is a clock too: a
// plane whose clock runs behind the server's still fires the firing the
// timer is for.
func (p *schedules) onScheduleTimer(ctx context.Context, f timer.Fired) error {
	return p.tickSchedule(ctx, string(f.Payload), f.At, false)
}

// tickSchedule does what schedule id owes at the plane's time (or at, if
// later), one decision at a time, and sets its next timer; queuedOnly, it
// only starts queued firings.
func (p *schedules) tickSchedule(ctx context.Context, id string, at time.Time, queuedOnly bool) error {
	for range maxTickSteps {
		l, err := p.loadSchedule(ctx, id)
		if errs.Is(err, errs.NotFound) {
			return nil // a timer set for a creation that was not recorded
		}
		if err != nil {
			return err
		}
		if l.s.Status != stewardv1.ScheduleStatus_SCHEDULE_STATUS_ACTIVE {
			// Paused or deleted: a resumption sets a timer anew. Revoked:
			// the firing due is recorded so, and no timer is set again.
			if err := p.recordRevoked(ctx, l, at, queuedOnly); !errors.Is(err, eventlog.ErrConflict) {
				return err
			}
			continue
		}
		active, err := p.runGoesOn(ctx, l.s)
		if err != nil {
			return err
		}
		tick, err := schedule.TickAt(l.s, later(p.now(), at), active)
		if err != nil {
			p.logger.Warn("schedule does not parse: it fires no more", "schedule", id, "err", err)
			return nil
		}
		ds := schedule.Decide(tick)
		if queuedOnly && (len(ds) == 0 || !ds[0].StartQueued) {
			return nil // due firings are the timer's
		}
		if len(ds) == 0 {
			return p.setFiringTimer(ctx, id, schedule.Next(l.s))
		}
		if err := p.fire(ctx, l, ds[0]); err != nil && !errors.Is(err, eventlog.ErrConflict) {
			return err
		}
	}
	return errs.New(errs.Unavailable, "schedule %s: a tick did not settle in %d steps", id, maxTickSteps)
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// runGoesOn reports whether s's last run has not ended: it is neither
// produced nor at an end. A run not on the log yet is a read behind the
// write that recorded it: an error, to be tried again. A run a
// cancel_previous firing cancelled, which s has yet to record, still goes
// on here: that firing was decided with it going, and a tick racing its
// record must decide it so again (CANCELLED_PREVIOUS, whose cancellation
// is then done already), not STARTED as if the run had ended by itself.
func (p *schedules) runGoesOn(ctx context.Context, s *stewardv1.Schedule) (bool, error) {
	taskID := s.LastTaskId
	if taskID == "" {
		return false, nil
	}
	recs, err := p.log.Read(ctx, taskID)
	if err != nil {
		return false, err
	}
	if len(recs) == 0 {
		return false, errs.New(errs.Unavailable, "run %s is not on the log yet", taskID)
	}
	t, err := task.Fold(recs)
	if err != nil {
		return false, err
	}
	if !task.Terminal(t.Status) && t.Status != stewardv1.TaskStatus_TASK_STATUS_PRODUCED {
		return true, nil
	}
	return cancelledUnrecorded(s, recs), nil
}

// cancelledUnrecorded reports whether run recs was ended by a
// cancel_previous of s that no firing of s records yet.
func cancelledUnrecorded(s *stewardv1.Schedule, recs []*stewardv1.EventRecord) bool {
	taskID := recs[0].Event.TaskId
	for _, f := range s.RecentFirings {
		if f.CancelledTaskId == taskID {
			return false
		}
	}
	cancel := cancelPreviousID(s.ScheduleId, taskID)
	return slices.ContainsFunc(recs, func(r *stewardv1.EventRecord) bool { return r.Event.EventId == cancel })
}

// cancelPreviousID is the id of the event by which a cancel_previous
// firing of schedule id ends its run taskID.
func cancelPreviousID(id, taskID string) string { return event.ID(id, "cancel_previous", taskID) }

// fire does decision d of schedule l — the side effect first, then the
// conditional record.
func (p *schedules) fire(ctx context.Context, l loadedSchedule, d schedule.Decision) error {
	s := l.s
	firing := &stewardv1.ScheduleFiring{
		FiringTime: timestamppb.New(d.Firing), Disposition: d.Disposition, Reason: d.Reason, MissedCount: uint32(d.MissedCount),
	}
	if d.MissedCount > 0 {
		firing.MissedFrom = timestamppb.New(d.MissedFrom)
	}
	if why := schedule.OverBudget(s); d.Runs() && why != "" {
		firing.Disposition, firing.Reason = stewardv1.FiringDisposition_FIRING_DISPOSITION_OVER_BUDGET, why
	} else if d.Runs() {
		if d.Disposition == stewardv1.FiringDisposition_FIRING_DISPOSITION_CANCELLED_PREVIOUS {
			if err := p.cancelRun(ctx, s, s.LastTaskId); err != nil {
				return err
			}
			firing.CancelledTaskId = s.LastTaskId
		}
		taskID, err := p.createRun(ctx, s, d.Firing)
		switch {
		case refusedRun(err):
			firing.Disposition, firing.Reason = stewardv1.FiringDisposition_FIRING_DISPOSITION_REFUSED, err.Error()
		case err != nil:
			return err
		default:
			firing.TaskId = taskID
			if p.runMade != nil {
				p.runMade(s.ScheduleId)
			}
		}
	}
	var payload event.Payload = &stewardv1.ScheduleFired{Firing: firing}
	kind := "fired"
	if d.StartQueued {
		payload, kind = &stewardv1.ScheduleRunStarted{FiringTime: firing.FiringTime, TaskId: firing.TaskId, Reason: firing.Reason}, "run_started"
	}
	ev, err := p.event(event.Meta{ID: schedule.FiredEventID(s.ScheduleId, kind, d.Firing), TaskID: s.ScheduleId, Actor: p.actor(s.Creator)}, payload)
	if err != nil {
		return err
	}
	rec, err := p.log.Append(ctx, l.head, ev)
	switch {
	case firing.TaskId == "":
		return err
	case errors.Is(err, eventlog.ErrConflict):
		return p.recordMadeRun(ctx, s, ev, d.Firing)
	case err == nil && rec.Event.EventId == ev.EventId && !namesRun(rec.Event, firing.TaskId):
		// Another tick recorded this firing first, otherwise.
		return p.cancelOrphan(ctx, s, firing.TaskId)
	}
	return err
}

// namesRun reports whether ev, a firing's record, names run taskID.
func namesRun(ev *stewardv1.Event, taskID string) bool {
	return ev.GetScheduleFired().GetFiring().GetTaskId() == taskID || ev.GetScheduleRunStarted().GetTaskId() == taskID
}

// cancelOrphan cancels run taskID, made for a firing that another tick
// (a second replica, or the timer racing the reaction to the previous
// run's end) recorded first as not running: no firing names the run, and
// the overlap policy would not see it.
func (p *schedules) cancelOrphan(ctx context.Context, s *stewardv1.Schedule, taskID string) error {
	id := event.ID(s.ScheduleId, "orphan", taskID)
	_, err := p.end(ctx, s.Creator, taskID, id, "", "its firing of schedule "+s.ScheduleId+" was recorded as not running it", stewardv1.TaskStatus_TASK_STATUS_CANCELLED, false)
	if errs.Is(err, errs.FailedPrecondition) {
		return nil
	}
	return err
}

// recordMadeRun records ev, the firing of a run already made, after a
// conflict: if the schedule was paused or deleted meanwhile it is recorded
// there all the same, so that no run goes unrecorded; on an active
// schedule the conflict stands and the tick decides again (making the same
// run, which is then recorded).
func (p *schedules) recordMadeRun(ctx context.Context, s *stewardv1.Schedule, ev *stewardv1.Event, firing time.Time) error {
	id, taskID := s.ScheduleId, ev.GetScheduleFired().GetFiring().GetTaskId()+ev.GetScheduleRunStarted().GetTaskId()
	made, err := p.log.Read(ctx, taskID)
	if err != nil {
		return err
	}
	if len(made) == 0 {
		return errs.New(errs.Unavailable, "run %s is not on the log yet", taskID)
	}
	for range maxScheduleTries {
		// Only an event stored since the run was made can record its
		// firing: read those, not the whole chain.
		recs, err := p.log.ReadScheduleAfter(ctx, id, made[0].Sequence)
		if err != nil {
			return err
		}
		for _, r := range recs {
			if r.Event.EventId == ev.EventId && namesRun(r.Event, taskID) {
				return nil
			}
			if r.Event.EventId == ev.EventId {
				return p.cancelOrphan(ctx, s, taskID)
			}
		}
		l, err := p.loadSchedule(ctx, id)
		if err != nil {
			return err
		}
		if recordedOtherwise(l.s, ev, firing) {
			return p.cancelOrphan(ctx, s, taskID)
		}
		if l.s.Status == stewardv1.ScheduleStatus_SCHEDULE_STATUS_ACTIVE {
			return eventlog.ErrConflict
		}
		if _, err = p.log.Append(ctx, l.head, ev); !errors.Is(err, eventlog.ErrConflict) {
			return err
		}
	}
	return errs.New(errs.Conflict, "schedule %s kept changing while its run %s was recorded", id, taskID)
}

// recordedOtherwise reports whether s has recorded the firing at firing
// that ev would record, under another event: a firing no longer due, or
// a queued one no longer queued.
func recordedOtherwise(s *stewardv1.Schedule, ev *stewardv1.Event, firing time.Time) bool {
	if ev.GetScheduleRunStarted() != nil {
		return len(s.Queued) == 0 || !s.Queued[0].AsTime().Equal(firing)
	}
	return !s.DueAfter.AsTime().Before(firing)
}

// refusedRun reports whether err refuses a run for good — its contract,
// a quota — rather than for now.
func refusedRun(err error) bool {
	switch errs.CodeOf(err) {
	case errs.Invalid, errs.QuotaExceeded, errs.FailedPrecondition, errs.AlreadyExists, errs.PermissionDenied, errs.TooLarge:
		return err != nil
	}
	return false
}

// createRun creates the run of s's firing at firing, as its creator: a
// task whose id derives from both, admitted under the creator's quotas.
// The run names its schedule, its firing and the run before it.
func (p *schedules) createRun(ctx context.Context, s *stewardv1.Schedule, firing time.Time) (string, error) {
	taskID := schedule.RunTaskID(s.ScheduleId, firing)
	contract := proto.CloneOf(s.GetTemplate().GetContract())
	contract.TaskId = taskID
	assigned, err := p.rollouts.assignRollouts(ctx, s.Tenant, taskID, contract) // rollout_resolve.go
	if err != nil {
		return "", err
	}
	created := &stewardv1.TaskCreated{Contract: contract, Tenant: s.Tenant, ScheduleRun: &stewardv1.ScheduleRun{
		ScheduleId: s.ScheduleId, FiringTime: timestamppb.New(firing), PreviousTaskId: s.LastTaskId,
	}, RolloutAssignments: assigned}
	ev, err := p.event(event.Meta{ID: event.ID(taskID, event.TypeTaskCreated), TaskID: taskID, Actor: p.actor(s.Creator), CausationID: s.ScheduleId}, created)
	if err != nil {
		return "", err
	}
	done, err := p.admitTask(ctx, owner{tenant: s.Tenant, principal: s.Creator}, taskID)
	if err != nil {
		return "", err
	}
	t, made, err := openTask(ctx, p.log, ev)
	done(createdAt(t, made, err))
	return taskID, err
}

// cancelRun cancels s's run taskID for cancel_previous, as the schedule's
// creator; a run that ended meanwhile is left as it is.
func (p *schedules) cancelRun(ctx context.Context, s *stewardv1.Schedule, taskID string) error {
	_, err := p.end(ctx, s.Creator, taskID, cancelPreviousID(s.ScheduleId, taskID), "", "a later firing of schedule "+s.ScheduleId+" cancels it", stewardv1.TaskStatus_TASK_STATUS_CANCELLED, false)
	if errs.Is(err, errs.FailedPrecondition) {
		return nil
	}
	return err
}

// runEnded is the reaction to a task's end (or production): when it is a
// schedule's run, a queued firing starts now rather than at the next
// firing, and the schedule records how the run ended (schedule_runend.go).
// No due firing is decided here: decided here as well as by its timer it
// could be recorded by either — a cancel_previous's cancellation ending
// the run would have its firing recorded STARTED, not CANCELLED_PREVIOUS.
func (p *schedules) runEnded(ctx context.Context, rec *stewardv1.EventRecord) error {
	recs, err := p.log.Read(ctx, rec.Event.TaskId)
	if err != nil || len(recs) == 0 {
		return err
	}
	run := recs[0].Event.GetTaskCreated().GetScheduleRun()
	if run == nil {
		return nil
	}
	if err := p.tickSchedule(ctx, run.ScheduleId, time.Time{}, true); err != nil {
		return err
	}
	return p.recordRunEnd(ctx, recs, run)
}
