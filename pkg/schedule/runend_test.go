package schedule_test

import (
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/steward-run/steward/pkg/errs"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/schedule"
)

// TestFoldRunEnds: runs' ends are counted by outcome, the latest firing's
// kept (not the latest recorded), and
// each marked on its firing — also once the schedule is deleted, as runs
// outlive it; one written by another plane is refused. Announced takes a
// failure and a person's cancellation, not an acceptance nor a
// cancellation by a later firing.
func TestFoldRunEnds(t *testing.T) {
	t0 := time.Date(2026, 5, 1, 9, 0, 0, 0, time.UTC)
	h := &history{t: t, at: t0}
	firing := map[string]time.Time{"run-a": t0.Add(time.Hour), "run-b": t0.Add(2 * time.Hour)}
	end := func(run string, o stewardv1.RunOutcome, superseded bool) *stewardv1.ScheduleRunEnded {
		return &stewardv1.ScheduleRunEnded{End: &stewardv1.ScheduleRunEnd{TaskId: run, FiringTime: timestamppb.New(firing[run]), Outcome: o, Superseded: superseded}}
	}
	h.add("control", &stewardv1.ScheduleCreated{})
	h.add("control", fired(t0.Add(time.Hour), stewardv1.FiringDisposition_FIRING_DISPOSITION_STARTED, "run-a"))
	h.add("control", fired(t0.Add(2*time.Hour), stewardv1.FiringDisposition_FIRING_DISPOSITION_STARTED, "run-b"))
	h.add("control", end("run-b", stewardv1.RunOutcome_RUN_OUTCOME_CANCELLED, true))
	h.add("control", &stewardv1.ScheduleDeleted{})
	h.add("control", end("run-a", stewardv1.RunOutcome_RUN_OUTCOME_FAILED, false)) // recorded later, fired earlier
	s, err := schedule.Fold(h.recs)
	if err != nil {
		t.Fatal(err)
	}
	switch {
	case s.RunsFailed != 1 || s.RunsCancelled != 1 || s.RunsAccepted != 0 || s.LastRunEnd.GetTaskId() != "run-b":
		t.Fatalf("failed %d, cancelled %d, accepted %d, last %v", s.RunsFailed, s.RunsCancelled, s.RunsAccepted, s.LastRunEnd)
	case s.RecentFirings[0].RunOutcome != stewardv1.RunOutcome_RUN_OUTCOME_FAILED || s.RecentFirings[1].RunOutcome != stewardv1.RunOutcome_RUN_OUTCOME_CANCELLED:
		t.Fatalf("firings %v", s.RecentFirings)
	}
	ok := len(h.recs)
	h.add("governance", end("run-c", stewardv1.RunOutcome_RUN_OUTCOME_FAILED, false))
	if _, err := schedule.Fold(h.recs); !errs.Is(err, errs.Corrupt) {
		t.Fatalf("a run's end written by governance: %v", err)
	}
	for _, bad := range []*stewardv1.ScheduleRunEnded{{}, end("", stewardv1.RunOutcome_RUN_OUTCOME_FAILED, false), end("run-a", stewardv1.RunOutcome_RUN_OUTCOME_UNSPECIFIED, false)} {
		h.recs = h.recs[:ok]
		h.add("control", bad)
		if _, err := schedule.Fold(h.recs); !errs.Is(err, errs.FailedPrecondition) {
			t.Errorf("a run's end %v folded: %v", bad, err)
		}
	}
	for _, tc := range []struct {
		end  *stewardv1.ScheduleRunEnd
		want bool
	}{
		{end("r", stewardv1.RunOutcome_RUN_OUTCOME_FAILED, false).End, true},
		{end("r", stewardv1.RunOutcome_RUN_OUTCOME_CANCELLED, false).End, true},
		{end("r", stewardv1.RunOutcome_RUN_OUTCOME_CANCELLED, true).End, false},
		{end("r", stewardv1.RunOutcome_RUN_OUTCOME_ACCEPTED, false).End, false},
	} {
		if got := schedule.Announced(tc.end); got != tc.want {
			t.Errorf("Announced(%v) = %t", tc.end, got)
		}
	}
}
