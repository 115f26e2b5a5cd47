package schedule_test

import (
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/steward-run/steward/pkg/errs"
	"github.com/steward-run/steward/pkg/event"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/schedule"
)

// history builds a schedule's records, one per payload, a minute apart.
type history struct {
	t    *testing.T
	at   time.Time
	recs []*stewardv1.EventRecord
}

func (h *history) add(plane string, p event.Payload) *history {
	h.t.Helper()
	ev, err := event.New(event.Meta{TaskID: "sch-1", Actor: &stewardv1.Actor{Principal: "alice", Plane: plane}, Time: h.at}, p)
	if err != nil {
		h.t.Fatal(err)
	}
	h.at = h.at.Add(time.Minute)
	h.recs = append(h.recs, &stewardv1.EventRecord{Sequence: uint64(len(h.recs) + 1), Event: ev})
	return h
}

func fired(at time.Time, d stewardv1.FiringDisposition, task string) *stewardv1.ScheduleFired {
	return &stewardv1.ScheduleFired{Firing: &stewardv1.ScheduleFiring{FiringTime: timestamppb.New(at), Disposition: d, TaskId: task}}
}

func TestFold(t *testing.T) {
	t0 := time.Date(2026, 5, 1, 9, 0, 0, 0, time.UTC)
	h := &history{t: t, at: t0}
	h.add("control", &stewardv1.ScheduleCreated{
		Spec:    &stewardv1.ScheduleSpec{Every: &stewardv1.ScheduleSpec_Interval{Interval: durationpb.New(time.Hour)}},
		Overlap: &stewardv1.Overlap{Policy: queue}, Tenant: "acme",
	})
	h.add("control", fired(t0.Add(time.Hour), stewardv1.FiringDisposition_FIRING_DISPOSITION_STARTED, "run-a"))
	h.add("control", fired(t0.Add(2*time.Hour), stewardv1.FiringDisposition_FIRING_DISPOSITION_QUEUED, ""))
	h.add("control", &stewardv1.ScheduleRunStarted{FiringTime: timestamppb.New(t0.Add(2 * time.Hour)), TaskId: "run-b"})
	h.add("control", &stewardv1.SchedulePaused{})
	h.at = t0.Add(10 * time.Hour)
	h.add("control", &stewardv1.ScheduleResumed{})
	s, err := schedule.Fold(h.recs)
	if err != nil {
		t.Fatal(err)
	}
	switch {
	case s.ScheduleId != "sch-1" || s.Creator != "alice" || s.Tenant != "acme" || s.Status != stewardv1.ScheduleStatus_SCHEDULE_STATUS_ACTIVE:
		t.Fatalf("schedule = %v", s)
	case s.RunsStarted != 2 || s.LastTaskId != "run-b" || len(s.Queued) != 0 || s.RecentFirings[1].TaskId != "run-b":
		t.Fatalf("runs = %d, last %s, queued %v, firings %v", s.RunsStarted, s.LastTaskId, s.Queued, s.RecentFirings)
	case !s.DueAfter.AsTime().Equal(t0.Add(10 * time.Hour)):
		t.Fatalf("due after %s: a resume does not catch up the pause", s.DueAfter.AsTime())
	case !schedule.Next(s).Equal(t0.Add(11 * time.Hour)):
		t.Fatalf("next = %s", schedule.Next(s))
	case s.LastSequence != 6:
		t.Fatalf("last sequence %d", s.LastSequence)
	}
	for _, tc := range []struct {
		name  string
		plane string
		p     event.Payload
		code  errs.Code
	}{
		{"resume an active schedule", "control", &stewardv1.ScheduleResumed{}, errs.FailedPrecondition},
		{"start a firing not queued", "control", &stewardv1.ScheduleRunStarted{FiringTime: timestamppb.New(t0), TaskId: "x"}, errs.FailedPrecondition},
		{"a firing by another plane", "execution", fired(t0.Add(11*time.Hour), stewardv1.FiringDisposition_FIRING_DISPOSITION_STARTED, "x"), errs.Corrupt},
		{"a task's event", "control", &stewardv1.TaskStarted{}, errs.Corrupt},
	} {
		t.Run(tc.name, func(t *testing.T) {
			more := &history{t: t, at: h.at, recs: append([]*stewardv1.EventRecord(nil), h.recs...)}
			more.add(tc.plane, tc.p)
			if _, err := schedule.Fold(more.recs); !errs.Is(err, tc.code) {
				t.Fatalf("Fold = %v, want %s", err, tc.code)
			}
		})
	}
	h.add("control", &stewardv1.ScheduleDeleted{})
	// A run made before the deletion landed is still recorded; nothing
	// else is.
	h.add("control", fired(t0.Add(11*time.Hour), stewardv1.FiringDisposition_FIRING_DISPOSITION_STARTED, "x"))
	if s, err := schedule.Fold(h.recs); err != nil || s.LastTaskId != "x" {
		t.Fatalf("a run made before the deletion: %v", err)
	}
	h.add("control", fired(t0.Add(12*time.Hour), stewardv1.FiringDisposition_FIRING_DISPOSITION_SKIPPED, ""))
	if _, err := schedule.Fold(h.recs); !errs.Is(err, errs.FailedPrecondition) {
		t.Fatalf("a skipped firing after deletion: %v", err)
	}
}

func TestFoldKeepsRecentFiringsAndEnds(t *testing.T) {
	t0 := time.Date(2026, 5, 1, 9, 0, 0, 0, time.UTC)
	h := &history{t: t, at: t0}
	h.add("control", &stewardv1.ScheduleCreated{Spec: &stewardv1.ScheduleSpec{
		Every:   &stewardv1.ScheduleSpec_Interval{Interval: durationpb.New(time.Minute)},
		EndTime: timestamppb.New(t0.Add(61 * time.Minute)),
	}})
	for i := 1; i <= 60; i++ {
		h.add("control", fired(t0.Add(time.Duration(i)*time.Minute), stewardv1.FiringDisposition_FIRING_DISPOSITION_SKIPPED, ""))
	}
	s, err := schedule.Fold(h.recs)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.RecentFirings) != schedule.MaxRecentFirings || !s.RecentFirings[49].FiringTime.AsTime().Equal(t0.Add(time.Hour)) {
		t.Fatalf("recent firings: %d, last %v", len(s.RecentFirings), s.RecentFirings[len(s.RecentFirings)-1])
	}
	if v := schedule.View(s); v.Status != stewardv1.ScheduleStatus_SCHEDULE_STATUS_ENDED || v.NextFiringTime != nil {
		t.Fatalf("a schedule past its end: %v, next %v", v.Status, v.NextFiringTime)
	}
	if a, b := schedule.RunTaskID("s", t0), schedule.RunTaskID("s", t0.In(newYork)); a != b || a == schedule.RunTaskID("s", t0.Add(time.Second)) || len(a) > 64 {
		t.Fatalf("run ids %s %s", a, b)
	}
}
