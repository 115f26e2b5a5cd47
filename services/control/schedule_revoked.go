package control

import (
	"context"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/steward-run/steward/pkg/event"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/schedule"
)

// recordRevoked records the first firing of schedule l, whose credential
// was revoked, once it is due at the plane's time (or at, if later), as
// REVOKED: it makes no run, and its record announces the stop to the
// schedule's owner (notify kind schedule.not_run). It is recorded once:
// nothing after it, for any other status, or for a queued start; and no
// timer is set after it, so a revoked schedule costs nothing more.
func (p *schedules) recordRevoked(ctx context.Context, l loadedSchedule, at time.Time, queuedOnly bool) error {
	s := l.s
	if s.Status != stewardv1.ScheduleStatus_SCHEDULE_STATUS_REVOKED || queuedOnly {
		return nil
	}
	spec, err := schedule.ParseSpec(s.Spec, s.CreatedAt.AsTime())
	if err != nil {
		return nil // fires no more either way
	}
	at, due := later(p.now(), at), spec.Next(s.DueAfter.AsTime())
	if due.IsZero() || due.After(at) || lastRevoked(s) {
		return nil
	}
	cs := s.Credential
	firing := &stewardv1.ScheduleFiring{
		FiringTime: timestamppb.New(due), Disposition: stewardv1.FiringDisposition_FIRING_DISPOSITION_REVOKED,
		Reason: "credential " + cs.GetCredential().GetCredentialId() + " of the schedule was revoked by " + cs.GetRevokedBy() + ": " + cs.GetRevokedReason(),
	}
	ev, err := p.event(event.Meta{ID: schedule.FiredEventID(s.ScheduleId, "fired", due), TaskID: s.ScheduleId, Actor: p.actor(s.Creator)}, &stewardv1.ScheduleFired{Firing: firing})
	if err != nil {
		return err
	}
	_, err = p.log.Append(ctx, l.head, ev)
	return err
}

// lastRevoked reports whether s's last firing was recorded REVOKED: the
// stop is announced once.
func lastRevoked(s *stewardv1.Schedule) bool {
	n := len(s.RecentFirings)
	return n > 0 && s.RecentFirings[n-1].Disposition == stewardv1.FiringDisposition_FIRING_DISPOSITION_REVOKED
}
