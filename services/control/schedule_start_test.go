package control_test

import (
	"context"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/stewardtest"
	"github.com/steward-run/steward/services/control"
)

// TestAStartTickTriesAgain: the tick a plane makes of a schedule when it
// starts fails for now (the schedule's last run is recorded, but not on
// the log yet: a read behind the write); it is tried again, and decides
// the firings due, though no timer fires (the next is an hour away in
// real time) and nobody ticks by hand. A start tick that gave up at the
// first error would leave the schedule to a timer that may be lost, or
// that the plane's clock is ahead of.
func TestAStartTickTriesAgain(t *testing.T) {
	r := newSchedules(t)
	s := r.create(hourly(stewardv1.CatchUpRule_CATCH_UP_RULE_LAST, 0, stewardv1.OverlapPolicy_OVERLAP_POLICY_SKIP, 0))
	first := s.CreatedAt.AsTime().Add(time.Hour)
	ctx := context.Background()
	if _, err := r.ctl.RecordRunNotMade(ctx, s.ScheduleId, first); err != nil {
		t.Fatal(err)
	}
	r.clock.Advance(2*time.Hour + time.Minute)
	r.ctl.Stop()
	var logs stewardtest.LogBuffer
	r.ctl = control.New(r.Log, slog.New(slog.NewTextHandler(&logs, nil)), r.config())
	r.start(t)
	stewardtest.Eventually(t, 10*time.Second, func() (bool, string) {
		return strings.Contains(logs.String(), "not ticked at start"), "the start tick has not failed yet"
	})
	if err := r.ctl.MakeRun(ctx, s.ScheduleId, first); err != nil {
		t.Fatal(err)
	}
	stewardtest.Eventually(t, 15*time.Second, func() (bool, string) {
		got := firings(r.get(s.ScheduleId), 0)
		return got == "+1h started, +2h skipped", got
	})
}

// TestAStartTicksOnlyLiveSchedules: a start lists the schedules it ticks
// without reading them, and leaves out the deleted ones (whose tick does
// nothing), so years of schedules created and deleted cost a start one
// listing, not a read of each chain.
func TestAStartTicksOnlyLiveSchedules(t *testing.T) {
	r := newSchedules(t)
	ctx := context.Background()
	var ids []string
	for range 3 {
		ids = append(ids, r.create(hourly(stewardv1.CatchUpRule_CATCH_UP_RULE_LAST, 0, stewardv1.OverlapPolicy_OVERLAP_POLICY_SKIP, 0)).ScheduleId)
	}
	if _, err := r.ctl.PauseSchedule(ctx, "alice", ids[0], "a while"); err != nil {
		t.Fatal(err)
	}
	if _, err := r.ctl.DeleteSchedule(ctx, "alice", ids[1], "done"); err != nil {
		t.Fatal(err)
	}
	live, err := r.ctl.LiveSchedules(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{ids[0], ids[2]}
	slices.Sort(want)
	if !slices.Equal(live, want) {
		t.Fatalf("a start ticks %v, want %v (all but the deleted one)", live, want)
	}
}
