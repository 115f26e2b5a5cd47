package schedule

import (
	"crypto/sha256"
	"encoding/hex"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/steward-run/steward/pkg/errs"
	"github.com/steward-run/steward/pkg/event"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// MaxRecentFirings is how many firings a Schedule keeps in
// recent_firings; the log keeps them all.
const MaxRecentFirings = 50

// RunTaskID returns the id of the task that runs the firing at firing of
// schedule id: derived from both, so that a second firing, a redelivered
// timer or a second control plane cannot make a second task.
func RunTaskID(scheduleID string, firing time.Time) string {
	sum := sha256.Sum256([]byte(scheduleID + "\x00" + firing.UTC().Format(time.RFC3339Nano)))
	return "run-" + hex.EncodeToString(sum[:16])
}

// FiredEventID returns the id of the event that records the firing at
// firing (of disposition kind "fired" or "run_started"), so that it is
// recorded once.
func FiredEventID(scheduleID, kind string, firing time.Time) string {
	return event.ID(scheduleID, "schedule."+kind, firing.UTC().Format(time.RFC3339Nano))
}

// Fold returns the schedule recs record, checking each event as Apply
// does. recs must start with the schedule's creation.
func Fold(recs []*stewardv1.EventRecord) (*stewardv1.Schedule, error) {
	if len(recs) == 0 {
		return nil, errs.New(errs.NotFound, "no events")
	}
	s := &stewardv1.Schedule{}
	for _, r := range recs {
		if err := Apply(s, r.Event, r.Sequence); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// Apply folds ev, stored at seq, into s, refusing an event that does not
// follow (FailedPrecondition) or that its type's owner did not write.
func Apply(s *stewardv1.Schedule, ev *stewardv1.Event, seq uint64) error {
	if owner := event.Owner(ev.Type); owner == "" || ev.GetActor().GetPlane() != owner {
		return errs.New(errs.Corrupt, "event %s of type %s is not written by its owner", ev.EventId, ev.Type)
	}
	at := ev.GetTime().AsTime()
	if s.ScheduleId == "" && ev.GetScheduleCreated() == nil {
		return errs.New(errs.FailedPrecondition, "schedule %s: %s before its creation", ev.TaskId, ev.Type)
	}
	switch p := ev.Payload.(type) {
	case *stewardv1.Event_ScheduleCreated:
		if s.ScheduleId != "" {
			return errs.New(errs.FailedPrecondition, "schedule %s exists", ev.TaskId)
		}
		c := p.ScheduleCreated
		*s = stewardv1.Schedule{
			ScheduleId: ev.TaskId, Tenant: c.Tenant, Creator: ev.GetActor().GetPrincipal(), Spec: c.Spec,
			Template: c.Template, Overlap: c.Overlap, CatchUp: c.CatchUp, RequestId: c.RequestId,
			Status: stewardv1.ScheduleStatus_SCHEDULE_STATUS_ACTIVE, CreatedAt: ev.Time, DueAfter: ev.Time,
		}
	case *stewardv1.Event_SchedulePaused:
		if err := from(s, ev, stewardv1.ScheduleStatus_SCHEDULE_STATUS_ACTIVE); err != nil {
			return err
		}
		s.Status = stewardv1.ScheduleStatus_SCHEDULE_STATUS_PAUSED
	case *stewardv1.Event_ScheduleResumed:
		if err := from(s, ev, stewardv1.ScheduleStatus_SCHEDULE_STATUS_PAUSED); err != nil {
			return err
		}
		s.Status = stewardv1.ScheduleStatus_SCHEDULE_STATUS_ACTIVE
		s.DueAfter = later(s.DueAfter, at) // firings while paused are not caught up
	case *stewardv1.Event_ScheduleDeleted:
		if err := from(s, ev, stewardv1.ScheduleStatus_SCHEDULE_STATUS_ACTIVE, stewardv1.ScheduleStatus_SCHEDULE_STATUS_PAUSED, stewardv1.ScheduleStatus_SCHEDULE_STATUS_REVOKED); err != nil {
			return err
		}
		s.Status = stewardv1.ScheduleStatus_SCHEDULE_STATUS_DELETED
	case *stewardv1.Event_ScheduleFired:
		// A run made just before a pause or deletion landed is still
		// recorded; no other firing is.
		states := []stewardv1.ScheduleStatus{stewardv1.ScheduleStatus_SCHEDULE_STATUS_ACTIVE}
		switch {
		case p.ScheduleFired.GetFiring().GetTaskId() != "":
			states = append(states, stewardv1.ScheduleStatus_SCHEDULE_STATUS_PAUSED, stewardv1.ScheduleStatus_SCHEDULE_STATUS_DELETED, stewardv1.ScheduleStatus_SCHEDULE_STATUS_REVOKED)
		case p.ScheduleFired.GetFiring().GetDisposition() == stewardv1.FiringDisposition_FIRING_DISPOSITION_REVOKED:
			// The firing that was due when the credential was revoked,
			// and only then.
			states = []stewardv1.ScheduleStatus{stewardv1.ScheduleStatus_SCHEDULE_STATUS_REVOKED}
		}
		if err := from(s, ev, states...); err != nil {
			return err
		}
		fired(s, p.ScheduleFired.GetFiring(), ev.Time)
	case *stewardv1.Event_ScheduleRunStarted:
		if err := runStarted(s, p.ScheduleRunStarted); err != nil {
			return err
		}
	case *stewardv1.Event_ScheduleRunEnded: // in any status: runs outlive a pause or deletion
		if err := runEnded(s, p.ScheduleRunEnded.GetEnd()); err != nil {
			return err
		}
	case *stewardv1.Event_ScheduleCredentialIssued:
		if err := credentialIssued(s, p.ScheduleCredentialIssued); err != nil {
			return err
		}
	case *stewardv1.Event_ScheduleCredentialRevoked:
		if err := credentialRevoked(s, ev, p.ScheduleCredentialRevoked); err != nil {
			return err
		}
	default:
		return errs.New(errs.Corrupt, "event %s: %s is not a schedule's event", ev.EventId, ev.Type)
	}
	s.LastSequence = seq
	return nil
}

// from refuses ev unless s is in one of states.
func from(s *stewardv1.Schedule, ev *stewardv1.Event, states ...stewardv1.ScheduleStatus) error {
	for _, st := range states {
		if s.Status == st {
			return nil
		}
	}
	return errs.New(errs.FailedPrecondition, "schedule %s is %s: %s does not apply", s.ScheduleId, StatusName(s.Status), ev.Type)
}

// fired records firing f.
func fired(s *stewardv1.Schedule, f *stewardv1.ScheduleFiring, at *timestamppb.Timestamp) {
	f = proto.CloneOf(f)
	f.RecordedAt = at
	s.DueAfter = later(s.DueAfter, f.GetFiringTime().AsTime())
	switch f.Disposition {
	case stewardv1.FiringDisposition_FIRING_DISPOSITION_QUEUED:
		s.Queued = append(s.Queued, f.FiringTime)
	case stewardv1.FiringDisposition_FIRING_DISPOSITION_STARTED, stewardv1.FiringDisposition_FIRING_DISPOSITION_CANCELLED_PREVIOUS:
		s.LastTaskId = f.TaskId
		s.RunsStarted++
		commit(s)
	}
	s.RecentFirings = append(s.RecentFirings, f)
	if n := len(s.RecentFirings) - MaxRecentFirings; n > 0 {
		s.RecentFirings = append(s.RecentFirings[:0], s.RecentFirings[n:]...)
	}
}

// runStarted starts the oldest queued firing, which r must name.
func runStarted(s *stewardv1.Schedule, r *stewardv1.ScheduleRunStarted) error {
	if len(s.Queued) == 0 || !s.Queued[0].AsTime().Equal(r.GetFiringTime().AsTime()) {
		return errs.New(errs.FailedPrecondition, "schedule %s: the firing at %s is not the first queued", s.ScheduleId, r.GetFiringTime().AsTime().UTC().Format(time.RFC3339))
	}
	s.Queued = s.Queued[1:]
	s.LastTaskId = r.TaskId
	s.RunsStarted++
	if r.TaskId != "" {
		commit(s)
	}
	for _, f := range s.RecentFirings {
		if f.FiringTime.AsTime().Equal(r.FiringTime.AsTime()) {
			f.TaskId = r.TaskId
		}
	}
	return nil
}

// Next returns the time of s's next firing after the last recorded one,
// or the zero time when it fires no more (or is not active). A schedule
// whose spec does not parse (written by another version) fires no more.
func Next(s *stewardv1.Schedule) time.Time {
	if s.Status != stewardv1.ScheduleStatus_SCHEDULE_STATUS_ACTIVE {
		return time.Time{}
	}
	spec, err := ParseSpec(s.Spec, s.CreatedAt.AsTime())
	if err != nil {
		return time.Time{}
	}
	return spec.Next(s.DueAfter.AsTime())
}

// View returns s as a caller sees it: with next_firing_time, and ENDED
// when an active schedule fires no more.
func View(s *stewardv1.Schedule) *stewardv1.Schedule {
	out := proto.CloneOf(s)
	if next := Next(s); !next.IsZero() {
		out.NextFiringTime = timestamppb.New(next)
	} else if s.Status == stewardv1.ScheduleStatus_SCHEDULE_STATUS_ACTIVE {
		out.Status = stewardv1.ScheduleStatus_SCHEDULE_STATUS_ENDED
	}
	return out
}

// StatusName is st without its prefix, in lower case: "active".
func StatusName(st stewardv1.ScheduleStatus) string {
	switch st {
	case stewardv1.ScheduleStatus_SCHEDULE_STATUS_ACTIVE:
		return "active"
	case stewardv1.ScheduleStatus_SCHEDULE_STATUS_PAUSED:
		return "paused"
	case stewardv1.ScheduleStatus_SCHEDULE_STATUS_DELETED:
		return "deleted"
	case stewardv1.ScheduleStatus_SCHEDULE_STATUS_ENDED:
		return "ended"
	case stewardv1.ScheduleStatus_SCHEDULE_STATUS_REVOKED:
		return "revoked"
	}
	return "unknown"
}

func later(a *timestamppb.Timestamp, b time.Time) *timestamppb.Timestamp {
	if a != nil && !a.AsTime().Before(b) {
		return a
	}
	return timestamppb.New(b)
}
