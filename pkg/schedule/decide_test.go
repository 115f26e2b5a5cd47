package schedule_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/steward-run/steward/pkg/errs"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/schedule"
)

func asErr(err error, e **errs.Error) bool { return errors.As(err, e) }

const (
	none     = stewardv1.CatchUpRule_CATCH_UP_RULE_NONE
	last     = stewardv1.CatchUpRule_CATCH_UP_RULE_LAST
	all      = stewardv1.CatchUpRule_CATCH_UP_RULE_ALL_WITHIN
	skip     = stewardv1.OverlapPolicy_OVERLAP_POLICY_SKIP
	queue    = stewardv1.OverlapPolicy_OVERLAP_POLICY_QUEUE
	cancelPr = stewardv1.OverlapPolicy_OVERLAP_POLICY_CANCEL_PREVIOUS
)

// decided renders decisions as "15:04 disposition" (missed: "n missed
// 15:04-15:04"; a queued start: "15:04 queued-start").
func decided(ds []schedule.Decision) string {
	var out []string
	for _, d := range ds {
		name := strings.ToLower(strings.TrimPrefix(d.Disposition.String(), "FIRING_DISPOSITION_"))
		switch {
		case d.StartQueued:
			out = append(out, d.Firing.Format("15:04")+" queued-start")
		case d.MissedCount > 0:
			out = append(out, fmt.Sprintf("%d missed %s-%s", d.MissedCount, d.MissedFrom.Format("15:04"), d.Firing.Format("15:04")))
		default:
			out = append(out, d.Firing.Format("15:04")+" "+name)
		}
	}
	return strings.Join(out, ", ")
}

func TestDecideCatchUpAndOverlap(t *testing.T) {
	created := time.Date(2026, 5, 1, 9, 0, 0, 0, time.UTC)
	hourly := func(t *testing.T) schedule.Spec {
		s, err := schedule.ParseSpec(&stewardv1.ScheduleSpec{Every: &stewardv1.ScheduleSpec_Interval{Interval: durationpb.New(time.Hour)}}, created)
		if err != nil {
			t.Fatal(err)
		}
		return s // 10:00, 11:00, ...
	}
	at := func(h, m int) time.Time { return time.Date(2026, 5, 1, h, m, 0, 0, time.UTC) }
	for _, tc := range []struct {
		name   string
		rules  schedule.Rules
		after  time.Time
		queued []time.Time
		now    time.Time
		active bool
		want   string
	}{
		{"on time", schedule.Rules{CatchUp: none, Overlap: skip}, created, nil, at(10, 0), false, "10:00 started"},
		{"a timer a little late is on time", schedule.Rules{CatchUp: none, Overlap: skip}, created, nil, at(10, 1), false, "10:00 started"},
		{"nothing due", schedule.Rules{CatchUp: none, Overlap: skip}, created, nil, at(9, 59), false, ""},
		{"down longer than the interval, none", schedule.Rules{CatchUp: none, Overlap: skip}, created, nil, at(13, 20), false, "4 missed 10:00-13:00"},
		{"down but back within the last firing's grace, none", schedule.Rules{CatchUp: none, Overlap: skip}, created, nil, at(13, 0), false, "3 missed 10:00-12:00, 13:00 started"},
		{"down, last", schedule.Rules{CatchUp: last, Overlap: skip}, created, nil, at(13, 20), false, "3 missed 10:00-12:00, 13:00 started"},
		{"down, all within 2h30m, skip", schedule.Rules{CatchUp: all, Window: 150 * time.Minute, Overlap: skip}, created, nil, at(13, 20), false,
			"1 missed 10:00-10:00, 11:00 started, 12:00 skipped, 13:00 skipped"},
		{"down, all within 2h30m, queue 1", schedule.Rules{CatchUp: all, Window: 150 * time.Minute, Overlap: queue, QueueLimit: 1}, created, nil, at(13, 20), false,
			"1 missed 10:00-10:00, 11:00 started, 12:00 queued, 13:00 skipped"},
		{"down, all within a day, cancel previous keeps the newest", schedule.Rules{CatchUp: all, Window: 24 * time.Hour, Overlap: cancelPr}, created, nil, at(12, 10), true,
			"10:00 skipped, 11:00 skipped, 12:00 cancelled_previous"},
		{"skip while the previous run goes on", schedule.Rules{CatchUp: none, Overlap: skip}, created, nil, at(10, 0), true, "10:00 skipped"},
		{"queue while the previous run goes on", schedule.Rules{CatchUp: none, Overlap: queue, QueueLimit: 2}, at(10, 0), []time.Time{at(10, 0)}, at(11, 0), true, "11:00 queued"},
		{"queue full", schedule.Rules{CatchUp: none, Overlap: queue, QueueLimit: 1}, at(10, 0), []time.Time{at(10, 0)}, at(11, 0), true, "11:00 skipped"},
		{"a queued firing starts once the previous run ended, then the due one queues", schedule.Rules{CatchUp: none, Overlap: queue, QueueLimit: 1},
			at(10, 0), []time.Time{at(10, 0)}, at(11, 0), false, "10:00 queued-start, 11:00 queued"},
		{"a queued firing starts between firings", schedule.Rules{CatchUp: none, Overlap: queue, QueueLimit: 1},
			at(10, 0), []time.Time{at(10, 0)}, at(10, 30), false, "10:00 queued-start"},
		{"cancel previous", schedule.Rules{CatchUp: none, Overlap: cancelPr}, created, nil, at(10, 0), true, "10:00 cancelled_previous"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := decided(schedule.Decide(schedule.Tick{Spec: hourly(t), Rules: tc.rules, DueAfter: tc.after, Queued: tc.queued, Now: tc.now, PreviousActive: tc.active}))
			if got != tc.want {
				t.Fatalf("Decide = %q, want %q", got, tc.want)
			}
		})
	}
}

// A tick after a long downtime of a minutely cron counts every missed
// firing and still runs only what the rule says.
func TestDecideLongDowntime(t *testing.T) {
	created := time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)
	s := cronSpec(t, "* * * * *", "", created)
	now := created.Add(30 * 24 * time.Hour)
	got := decided(schedule.Decide(schedule.Tick{Spec: s, Rules: schedule.Rules{CatchUp: all, Window: time.Hour, Overlap: queue, QueueLimit: 100}, DueAfter: created, Now: now}))
	if !strings.HasPrefix(got, "43139 missed 00:01-22:59, 23:00 started, 23:01 queued") || strings.Count(got, "queued") != 60 {
		t.Fatalf("Decide = %.200q… (%d queued)", got, strings.Count(got, "queued"))
	}
}

// The daily 02:30 of a spring-forward day is due at 03:30 EDT: a tick then
// starts it, and a tick the next morning finds nothing missed.
func TestDecideAcrossSpringForward(t *testing.T) {
	created := time.Date(2026, 3, 1, 0, 0, 0, 0, newYork)
	s := cronSpec(t, "30 2 * * *", "America/New_York", created)
	rules := schedule.Rules{CatchUp: none, Overlap: skip}
	due := time.Date(2026, 3, 8, 3, 30, 0, 0, newYork)
	got := schedule.Decide(schedule.Tick{Spec: s, Rules: rules, DueAfter: time.Date(2026, 3, 7, 2, 30, 0, 0, newYork), Now: due.Add(10 * time.Second)})
	if len(got) != 1 || !got[0].Firing.Equal(due) || !got[0].Runs() {
		t.Fatalf("Decide = %q", decided(got))
	}
	if got := schedule.Decide(schedule.Tick{Spec: s, Rules: rules, DueAfter: due, Now: due.Add(5 * time.Hour)}); len(got) != 0 {
		t.Fatalf("Decide after = %q", decided(got))
	}
}

func TestParseRules(t *testing.T) {
	r, err := schedule.ParseRules(nil, &stewardv1.Overlap{Policy: queue})
	if err != nil || r.CatchUp != none || r.QueueLimit != 1 {
		t.Fatalf("defaults = %+v, %v", r, err)
	}
	for _, tc := range []struct {
		c     *stewardv1.CatchUp
		o     *stewardv1.Overlap
		field string
	}{
		{&stewardv1.CatchUp{Rule: all}, nil, "catch_up.window"},
		{&stewardv1.CatchUp{Rule: last, Window: durationpb.New(time.Hour)}, nil, "catch_up.window"},
		{&stewardv1.CatchUp{Rule: 9}, nil, "catch_up.rule"},
		{nil, &stewardv1.Overlap{Policy: 9}, "overlap.policy"},
		{nil, &stewardv1.Overlap{Policy: skip, QueueLimit: 2}, "overlap.queue_limit"},
		{nil, &stewardv1.Overlap{Policy: queue, QueueLimit: 101}, "overlap.queue_limit"},
	} {
		_, err := schedule.ParseRules(tc.c, tc.o)
		var e *errs.Error
		if !asErr(err, &e) || e.Field != tc.field {
			t.Errorf("ParseRules(%v, %v) = %v, want %s", tc.c, tc.o, err, tc.field)
		}
	}
}

// BenchmarkDecideLongDowntime is a tick after 30 days down of a minutely
// cron: 43,200 due firings walked and counted.
func BenchmarkDecideLongDowntime(b *testing.B) {
	created := time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)
	s, err := schedule.ParseSpec(&stewardv1.ScheduleSpec{Every: &stewardv1.ScheduleSpec_Cron{Cron: "* * * * *"}, TimeZone: "America/New_York"}, created)
	if err != nil {
		b.Fatal(err)
	}
	tick := schedule.Tick{Spec: s, Rules: schedule.Rules{CatchUp: last, Overlap: skip}, DueAfter: created, Now: created.Add(30 * 24 * time.Hour)}
	for b.Loop() {
		if len(schedule.Decide(tick)) != 2 {
			b.Fatal("want a MISSED record and a run")
		}
	}
}

// A downtime with more firings than a tick walks (a 1s interval down 30
// days: 2,592,000) still runs the newest under LAST, once: not a firing
// days old, and not one per walk.
func TestDecideLastAfterMoreFiringsThanAWalk(t *testing.T) {
	created := time.Date(2026, 5, 1, 9, 0, 0, 0, time.UTC)
	spec, err := schedule.ParseSpec(&stewardv1.ScheduleSpec{Every: &stewardv1.ScheduleSpec_Interval{Interval: durationpb.New(time.Second)}}, created)
	if err != nil {
		t.Fatal(err)
	}
	now := created.Add(30 * 24 * time.Hour)
	ds := schedule.Decide(schedule.Tick{Spec: spec, Rules: schedule.Rules{CatchUp: last, Overlap: skip}, DueAfter: created, Now: now})
	if len(ds) != 2 {
		t.Fatalf("decisions = %s, want a MISSED and a run", decided(ds))
	}
	missed, run := ds[0], ds[1]
	want := 30*24*3600 - 1
	if missed.MissedCount != want || !missed.MissedFrom.Equal(created.Add(time.Second)) || !missed.Firing.Equal(now.Add(-time.Second)) {
		t.Errorf("missed = %d from %s to %s, want %d from %s to %s", missed.MissedCount, missed.MissedFrom, missed.Firing, want, created.Add(time.Second), now.Add(-time.Second))
	}
	if !run.Runs() || !run.Firing.Equal(now) {
		t.Errorf("run = %s at %s, want the firing at now, %s", run.Disposition, run.Firing, now)
	}
}

// The same for a minutely cron down 800 days (1,152,000 firings): the walk
// resumes just before now, and LAST runs the firing at now.
func TestDecideLastAfterMoreCronFiringsThanAWalk(t *testing.T) {
	created := time.Date(2026, 5, 1, 9, 0, 0, 0, time.UTC)
	spec, err := schedule.ParseSpec(&stewardv1.ScheduleSpec{Every: &stewardv1.ScheduleSpec_Cron{Cron: "* * * * *"}}, created)
	if err != nil {
		t.Fatal(err)
	}
	now := created.Add(800 * 24 * time.Hour)
	ds := schedule.Decide(schedule.Tick{Spec: spec, Rules: schedule.Rules{CatchUp: last, Overlap: skip}, DueAfter: created, Now: now})
	if len(ds) != 2 || ds[0].MissedCount == 0 || !ds[1].Runs() || !ds[1].Firing.Equal(now) {
		t.Fatalf("decisions = %s (run at %v), want a MISSED and a run of the firing at now, %s", decided(ds), ds[len(ds)-1].Firing, now)
	}
}
