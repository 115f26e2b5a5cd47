package control_test

import (
	"context"
	"testing"
	"time"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// TestScheduleTickRacingACancelPreviousRecordsIt: a tick that finds the
// last run cancelled by a cancel_previous firing not yet recorded (it
// raced that firing's record: two firing timers due at once after a
// restart) decides the firing so again — cancelled_previous, naming the
// run — not started, as if the run had ended by itself.
func TestScheduleTickRacingACancelPreviousRecordsIt(t *testing.T) {
	r := newSchedules(t)
	s := r.create(hourly(stewardv1.CatchUpRule_CATCH_UP_RULE_NONE, 0, stewardv1.OverlapPolicy_OVERLAP_POLICY_CANCEL_PREVIOUS, 0))
	s = r.tick(s.ScheduleId, time.Hour)
	first := s.LastTaskId
	r.running(first)
	if err := r.ctl.CancelAsPrevious(context.Background(), s, first); err != nil {
		t.Fatal(err)
	}
	s = r.tick(s.ScheduleId, time.Hour)
	if got := firings(s, 1); got != "+2h cancelled_previous" || s.RecentFirings[1].CancelledTaskId != first {
		t.Fatalf("second firing: %q naming %q as cancelled; want +2h cancelled_previous naming %s", got, s.RecentFirings[1].CancelledTaskId, first)
	}
	// Recorded, the cancellation is no longer pending: the run has ended.
	s = r.tick(s.ScheduleId, time.Hour)
	if got := firings(s, 2); got != "+3h cancelled_previous" || s.RecentFirings[2].CancelledTaskId == first {
		t.Fatalf("third firing: %q naming %q", got, s.RecentFirings[2].CancelledTaskId)
	}
}
