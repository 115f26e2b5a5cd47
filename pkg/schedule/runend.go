package schedule

import (
	"google.golang.org/protobuf/proto"

	"github.com/steward-run/steward/pkg/errs"
	"github.com/steward-run/steward/pkg/event"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// RunEndedEventID returns the id of the event that records how run taskID
// of schedule id ended, so that it is recorded once however often the
// run's end is delivered and however many control planes see it.
func RunEndedEventID(scheduleID, taskID string) string {
	return event.ID(scheduleID, event.TypeScheduleRunEnded, taskID)
}

// runEnded records end, how one of s's runs ended: the count of its
// outcome, the outcome on its firing if s still keeps it, and the end
// itself if it is of the latest firing to end — ends are recorded as the
// runs' end events are delivered, not always in the runs' order.
func runEnded(s *stewardv1.Schedule, end *stewardv1.ScheduleRunEnd) error {
	if end.GetTaskId() == "" || end.GetFiringTime() == nil || end.GetOutcome() == stewardv1.RunOutcome_RUN_OUTCOME_UNSPECIFIED {
		return errs.New(errs.FailedPrecondition, "schedule %s: a run's end names no run, firing or outcome", s.ScheduleId)
	}
	if s.LastRunEnd == nil || !end.GetFiringTime().AsTime().Before(s.LastRunEnd.GetFiringTime().AsTime()) {
		s.LastRunEnd = proto.CloneOf(end)
	}
	switch end.GetOutcome() {
	case stewardv1.RunOutcome_RUN_OUTCOME_ACCEPTED:
		s.RunsAccepted++
	case stewardv1.RunOutcome_RUN_OUTCOME_FAILED:
		s.RunsFailed++
	case stewardv1.RunOutcome_RUN_OUTCOME_CANCELLED:
		s.RunsCancelled++
	}
	for _, f := range s.RecentFirings {
		if f.TaskId != "" && f.TaskId == end.GetTaskId() {
			f.RunOutcome = end.GetOutcome()
		}
	}
	return nil
}

// Announced reports whether end is one its schedule's owner hears of: a
// run that failed, or that was cancelled other than by a later firing
// (which is the cancel_previous policy at work).
func Announced(end *stewardv1.ScheduleRunEnd) bool {
	switch end.GetOutcome() {
	case stewardv1.RunOutcome_RUN_OUTCOME_FAILED:
		return true
	case stewardv1.RunOutcome_RUN_OUTCOME_CANCELLED:
		return !end.GetSuperseded()
	}
	return false
}
