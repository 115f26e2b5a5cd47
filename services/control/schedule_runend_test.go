package control_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/steward-run/steward/pkg/event"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/schedule"
	"github.com/steward-run/steward/pkg/stewardtest"
	"github.com/steward-run/steward/services/control"
)

// TestScheduleRecordsHowRunsEnd: a run the agent fails, and a run a later
// firing cancels (cancel_previous), are each recorded once on the
// schedule (schedule.run_ended) — again after their ends are delivered a
// second time — with the outcome on the schedule's view, its counts and
// its firings; the superseded one is marked so.
func TestScheduleRecordsHowRunsEnd(t *testing.T) {
	r := newSchedules(t)
	ctx := context.Background()
	s := r.create(hourly(stewardv1.CatchUpRule_CATCH_UP_RULE_NONE, 0, stewardv1.OverlapPolicy_OVERLAP_POLICY_CANCEL_PREVIOUS, 0))
	first := r.tick(s.ScheduleId, time.Hour).LastTaskId
	if _, err := r.ctl.FailTask(ctx, "alice", &stewardv1.FailTaskRequest{TaskId: first, Reason: "the source was down"}); err != nil {
		t.Fatal(err)
	}
	s = r.waitRunEnds(s.ScheduleId, 1)
	if e := s.LastRunEnd; e.TaskId != first || e.Outcome != stewardv1.RunOutcome_RUN_OUTCOME_FAILED || e.Reason != "the source was down" || e.Superseded || s.RunsFailed != 1 {
		t.Fatalf("after the first run failed the schedule says %v, failed %d", e, s.RunsFailed)
	}
	second := r.tick(s.ScheduleId, time.Hour).LastTaskId
	third := r.tick(s.ScheduleId, time.Hour).LastTaskId // cancels the second
	s = r.waitRunEnds(s.ScheduleId, 2)
	if e := s.LastRunEnd; e.TaskId != second || e.Outcome != stewardv1.RunOutcome_RUN_OUTCOME_CANCELLED || !e.Superseded || s.RunsCancelled != 1 {
		t.Fatalf("after the third firing the schedule says %v, cancelled %d", e, s.RunsCancelled)
	}
	var outcomes []string
	for _, f := range s.RecentFirings {
		outcomes = append(outcomes, f.RunOutcome.String())
	}
	if got := fmt.Sprint(outcomes); got != "[RUN_OUTCOME_FAILED RUN_OUTCOME_CANCELLED RUN_OUTCOME_UNSPECIFIED]" {
		t.Fatalf("firings' run outcomes %s", got)
	}
	// Delivered again, or seen by a second plane: recorded once each. The
	// third run has not ended: nothing.
	for _, run := range []string{first, second, third, first} {
		if err := r.ctl.RunEnded(ctx, run); err != nil {
			t.Fatal(err)
		}
	}
	if n := r.runEnds(s.ScheduleId); n != 2 {
		t.Fatalf("%d schedule.run_ended events, want 2", n)
	}
}

// runEnds counts the schedule.run_ended events on schedule id's chain.
func (r *schedules) runEnds(id string) int {
	r.t.Helper()
	recs, err := r.Log.ReadSchedule(context.Background(), id)
	if err != nil {
		r.t.Fatal(err)
	}
	n := 0
	for _, rec := range recs {
		if rec.Event.Type == event.TypeScheduleRunEnded {
			n++
		}
	}
	return n
}

// waitRunEnds waits until schedule id has recorded n runs' ends.
func (r *schedules) waitRunEnds(id string, n int) *stewardv1.Schedule {
	r.t.Helper()
	stewardtest.Eventually(r.t, 30*time.Second, func() (bool, string) {
		got := r.runEnds(id)
		return got == n, fmt.Sprintf("%d runs' ends recorded, want %d", got, n)
	})
	return r.get(id)
}

// TestRunEndOfAnUnrecordedFiringOfADeletedSchedule: a tick that made its
// run and was cut off before its record, then the schedule deleted (so no
// tick records that firing ever), leaves a run no firing names; its end
// is settled as an orphan's, not tried again without end.
func TestRunEndOfAnUnrecordedFiringOfADeletedSchedule(t *testing.T) {
	var r *schedules
	tickCtx, cut := context.WithCancel(context.Background())
	h := newHarness(t, control.AfterRunMade(func(string) { cut() }))
	r = &schedules{harness: h, t: t}
	r.clock.Set(time.Now().Truncate(time.Second))
	ctx := context.Background()
	s := r.create(hourly(stewardv1.CatchUpRule_CATCH_UP_RULE_NONE, 0, stewardv1.OverlapPolicy_OVERLAP_POLICY_SKIP, 0))
	r.clock.Advance(time.Hour)
	if err := r.ctl.TickSchedule(tickCtx, s.ScheduleId); err == nil {
		t.Fatal("a tick cut off before its record succeeded")
	}
	run := schedule.RunTaskID(s.ScheduleId, s.CreatedAt.AsTime().Add(time.Hour))
	if _, err := r.ctl.DeleteSchedule(ctx, "alice", s.ScheduleId, "done"); err != nil {
		t.Fatal(err)
	}
	r.running(run)
	if _, err := r.ctl.FailTask(ctx, "alice", &stewardv1.FailTaskRequest{TaskId: run, Reason: "down"}); err != nil {
		t.Fatal(err)
	}
	if err := r.ctl.RunEnded(ctx, run); err != nil {
		t.Fatalf("the end of a run of a deleted schedule's unrecorded firing: %v", err)
	}
}
