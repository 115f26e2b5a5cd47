package e2e_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/durationpb"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/gen/steward/v1/stewardv1connect"
	"github.com/steward-run/steward/pkg/schedule"
	"github.com/steward-run/steward/pkg/stewardtest"
)

// TestScheduleCatchesUpAfterAKill runs an interval schedule (every 2s,
// catch-up LAST, cancel_previous) on `steward dev`, kills the binary
// (SIGKILL) once a run started, keeps it down for more than three
// intervals and starts it again on the same data: the firings due while it
// was down are recorded missed but the latest, which runs; every run's id
// is derived from its firing, and there is one task per run.
func TestScheduleCatchesUpAfterAKill(t *testing.T) {
	data := t.TempDir()
	p := startBinary(t, data)
	sc := stewardv1connect.NewScheduleServiceClient(&http.Client{Timeout: 30 * time.Second}, p.url)
	resp, err := sc.CreateSchedule(context.Background(), connect.NewRequest(&stewardv1.CreateScheduleRequest{
		RequestId: "every-2s",
		Spec:      &stewardv1.ScheduleSpec{Every: &stewardv1.ScheduleSpec_Interval{Interval: durationpb.New(2 * time.Second)}},
		Template:  &stewardv1.ScheduleTemplate{Contract: contract()},
		CatchUp:   &stewardv1.CatchUp{Rule: stewardv1.CatchUpRule_CATCH_UP_RULE_LAST},
		Overlap:   &stewardv1.Overlap{Policy: stewardv1.OverlapPolicy_OVERLAP_POLICY_CANCEL_PREVIOUS},
	}))
	if err != nil {
		t.Fatal(err)
	}
	id := resp.Msg.Schedule.ScheduleId
	get := func() *stewardv1.Schedule {
		r, err := sc.GetSchedule(context.Background(), connect.NewRequest(&stewardv1.GetScheduleRequest{ScheduleId: id}))
		if err != nil {
			return nil
		}
		return r.Msg.Schedule
	}
	stewardtest.Eventually(t, 20*time.Second, func() (bool, string) {
		s := get()
		return s != nil && s.RunsStarted >= 1, fmt.Sprintf("no run yet: %v", s)
	})
	p.kill()
	down := time.Now()
	waitPast(t, down.Add(7*time.Second)) // more than three intervals
	execAt := time.Now()
	p = startBinary(t, data)
	restart := time.Now()
	sc = stewardv1connect.NewScheduleServiceClient(&http.Client{Timeout: 30 * time.Second}, p.url)
	// The downtime's firings are recorded missed at once, and a run follows.
	// A machine that stalls past a firing's grace (two seconds here) between
	// the two may record that firing missed too, so a few single misses may
	// come between.
	var s *stewardv1.Schedule
	missedAt, caughtAt := -1, -1
	stewardtest.Eventually(t, 20*time.Second, func() (bool, string) {
		s = get()
		missedAt, caughtAt = -1, -1
		for i, f := range s.GetRecentFirings() {
			switch {
			case missedAt < 0 && f.Disposition == stewardv1.FiringDisposition_FIRING_DISPOSITION_MISSED:
				missedAt = i
			case missedAt >= 0 && f.TaskId != "":
				caughtAt = i
				return true, ""
			}
		}
		return false, fmt.Sprintf("no missed firings followed by a run yet: %v", s.GetRecentFirings())
	})
	t.Logf("the catch-up was on record %s after the exec (%s after the binary was serving)",
		time.Since(execAt).Round(time.Millisecond), time.Since(restart).Round(time.Millisecond))
	missed, caught := s.RecentFirings[missedAt], s.RecentFirings[caughtAt]
	if missed.MissedCount < 2 {
		t.Errorf("%d firings missed over a downtime of more than three intervals", missed.MissedCount)
	}
	for _, f := range s.RecentFirings[missedAt+1 : caughtAt] {
		if f.Disposition != stewardv1.FiringDisposition_FIRING_DISPOSITION_MISSED {
			t.Errorf("between the catch-up's misses and its run: %v", f)
		}
	}
	if caught.Disposition != stewardv1.FiringDisposition_FIRING_DISPOSITION_CANCELLED_PREVIOUS || caught.TaskId == "" {
		t.Errorf("the latest firing due at the restart: %v", caught)
	}
	// The run is of the latest firing due when it was recorded; with no
	// stall between, that is a firing due while the binary was down (the
	// catch-up rule LAST runs it), not one after it was back.
	ft, at := caught.FiringTime.AsTime(), caught.RecordedAt.AsTime()
	if ft.After(at) || at.Sub(ft) > 2*time.Second {
		t.Errorf("the firing run is at %s, not the latest before it was recorded at %s", ft, at)
	}
	if caughtAt == missedAt+1 && ft.After(restart) {
		t.Errorf("the firing run is at %s, after the restart at %s: the catch-up ran none of the missed ones", ft, restart)
	}
	// One task per run, each the firing's own: every task listed is the
	// run of a recorded firing, and no firing ran twice. (A run is created
	// just before its firing is recorded, hence Eventually.)
	c := newClients(p.url)
	stewardtest.Eventually(t, 10*time.Second, func() (bool, string) {
		list, err := c.query.ListTasks(context.Background(), connect.NewRequest(&stewardv1.ListTasksRequest{}))
		if err != nil {
			return false, err.Error()
		}
		s = get()
		runs := map[string]bool{}
		for _, f := range s.GetRecentFirings() {
			if f.TaskId == "" {
				continue
			}
			if f.TaskId != schedule.RunTaskID(id, f.FiringTime.AsTime()) || runs[f.TaskId] {
				t.Fatalf("firing %s ran as %s", f.FiringTime.AsTime(), f.TaskId)
			}
			runs[f.TaskId] = true
		}
		for _, tk := range list.Msg.Tasks {
			if !runs[tk.Contract.TaskId] {
				return false, fmt.Sprintf("task %s is no recorded firing's run", tk.Contract.TaskId)
			}
		}
		return uint64(len(runs)) == s.RunsStarted, fmt.Sprintf("%d runs recorded, %d started", len(runs), s.RunsStarted)
	})
}
