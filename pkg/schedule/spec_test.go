package schedule_test

import (
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/steward-run/steward/pkg/errs"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/schedule"
)

var newYork = mustLoad("America/New_York")

func mustLoad(name string) *time.Location {
	loc, err := time.LoadLocation(name)
	if err != nil {
		panic(err)
	}
	return loc
}

func cronSpec(t *testing.T, expr, zone string, created time.Time) schedule.Spec {
	t.Helper()
	s, err := schedule.ParseSpec(&stewardv1.ScheduleSpec{Every: &stewardv1.ScheduleSpec_Cron{Cron: expr}, TimeZone: zone}, created)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// firings returns the first n firings after t, formatted in loc.
func firings(s schedule.Spec, after time.Time, n int, loc *time.Location) []string {
	var out []string
	for f := range s.Firings(after) {
		if len(out) == n {
			break
		}
		out = append(out, f.In(loc).Format("01-02 15:04 MST"))
	}
	return out
}

func TestCronAcrossDaylightSaving(t *testing.T) {
	for _, tc := range []struct {
		name, expr string
		after      time.Time
		want       []string
	}{
		{"daily 02:30 on spring forward fires once, when 02:30 EST would have been", "30 2 * * *",
			time.Date(2026, 3, 6, 12, 0, 0, 0, newYork),
			[]string{"03-07 02:30 EST", "03-08 03:30 EDT", "03-09 02:30 EDT"}},
		{"daily 02:30 on fall back (02:30 happens once)", "30 2 * * *",
			time.Date(2026, 10, 31, 12, 0, 0, 0, newYork),
			[]string{"11-01 02:30 EST", "11-02 02:30 EST"}},
		{"daily 01:30 on fall back fires on the first 01:30 only", "30 1 * * *",
			time.Date(2026, 10, 31, 12, 0, 0, 0, newYork),
			[]string{"11-01 01:30 EDT", "11-02 01:30 EST"}},
		{"hourly on spring forward: every real hour, 02:00 does not exist", "0 * * * *",
			time.Date(2026, 3, 8, 0, 30, 0, 0, newYork),
			[]string{"03-08 01:00 EST", "03-08 03:00 EDT", "03-08 04:00 EDT"}},
		{"hourly on fall back: every real hour, 01:00 twice", "0 * * * *",
			time.Date(2026, 11, 1, 0, 30, 0, 0, newYork),
			[]string{"11-01 01:00 EDT", "11-01 01:00 EST", "11-01 02:00 EST", "11-01 03:00 EST"}},
		{"half-hourly at hour 1 on fall back: hour fixed, so once", "0,30 1 * * *",
			time.Date(2026, 11, 1, 0, 30, 0, 0, newYork),
			[]string{"11-01 01:00 EDT", "11-01 01:30 EDT", "11-02 01:00 EST"}},
		{"weekdays at 9", "0 9 * * 1-5",
			time.Date(2026, 3, 6, 10, 0, 0, 0, newYork), // a Friday
			[]string{"03-09 09:00 EDT", "03-10 09:00 EDT"}},
		{"day of month or day of week, as Vixie cron", "0 0 13 * 5",
			time.Date(2026, 2, 1, 0, 0, 0, 0, newYork),
			[]string{"02-06 00:00 EST", "02-13 00:00 EST", "02-20 00:00 EST"}},
		{"steps and sunday as 7", "*/20 6 * * 7",
			time.Date(2026, 3, 1, 6, 10, 0, 0, newYork), // a Sunday
			[]string{"03-01 06:20 EST", "03-01 06:40 EST", "03-08 06:00 EDT"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := cronSpec(t, tc.expr, "America/New_York", time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
			got := firings(s, tc.after, len(tc.want), newYork)
			if len(got) != len(tc.want) {
				t.Fatalf("firings = %v, want %v", got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Fatalf("firings = %v, want %v", got, tc.want)
				}
			}
		})
	}
}

func TestSpecStartEndAndInterval(t *testing.T) {
	created := time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)
	s, err := schedule.ParseSpec(&stewardv1.ScheduleSpec{
		Every:   &stewardv1.ScheduleSpec_Interval{Interval: durationpb.New(90 * time.Minute)},
		EndTime: timestamppb.New(created.Add(5 * time.Hour)),
	}, created)
	if err != nil {
		t.Fatal(err)
	}
	got := firings(s, created.Add(-time.Hour), 10, time.UTC)
	want := []string{"05-01 11:30 UTC", "05-01 13:00 UTC", "05-01 14:30 UTC"} // 16:00 is the end: not fired
	if len(got) != len(want) || got[0] != want[0] || got[2] != want[2] {
		t.Fatalf("interval firings = %v, want %v", got, want)
	}
	if n := s.Next(created.Add(3 * time.Hour)); !n.Equal(created.Add(270 * time.Minute)) {
		t.Fatalf("Next on no firing = %s", n)
	}
	if n := s.Next(created.Add(4*time.Hour + 30*time.Minute)); !n.IsZero() {
		t.Fatalf("Next past the last = %s, want none", n)
	}
	start := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	c, err := schedule.ParseSpec(&stewardv1.ScheduleSpec{Every: &stewardv1.ScheduleSpec_Cron{Cron: "0 12 * * *"}, StartTime: timestamppb.New(start)}, created)
	if err != nil {
		t.Fatal(err)
	}
	if n := c.Next(created); !n.Equal(start.Add(12 * time.Hour)) {
		t.Fatalf("cron Next before its start = %s", n)
	}
	ok, _ := schedule.ParseSpec(&stewardv1.ScheduleSpec{Every: &stewardv1.ScheduleSpec_Interval{Interval: durationpb.New(time.Hour)}, StartTime: timestamppb.New(start)}, created)
	if n := ok.Next(start.Add(-time.Second)); !n.Equal(start) {
		t.Fatalf("interval Next just before its start = %s, want the start", n)
	}
}

func TestSpecRefusals(t *testing.T) {
	created := time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)
	cron := func(e string) *stewardv1.ScheduleSpec {
		return &stewardv1.ScheduleSpec{Every: &stewardv1.ScheduleSpec_Cron{Cron: e}}
	}
	for _, tc := range []struct {
		spec  *stewardv1.ScheduleSpec
		field string
	}{
		{nil, "spec"},
		{&stewardv1.ScheduleSpec{}, "spec"},
		{cron("* * * *"), "spec.cron"},
		{cron("60 * * * *"), "spec.cron"},
		{cron("* 24 * * *"), "spec.cron"},
		{cron("* * 0 * *"), "spec.cron"},
		{cron("5-1 * * * *"), "spec.cron"},
		{cron("*/0 * * * *"), "spec.cron"},
		{cron("a * * * *"), "spec.cron"},
		{&stewardv1.ScheduleSpec{Every: &stewardv1.ScheduleSpec_Cron{Cron: "* * * * *"}, TimeZone: "Mars/Olympus"}, "spec.time_zone"},
		{&stewardv1.ScheduleSpec{Every: &stewardv1.ScheduleSpec_Cron{Cron: "* * * * *"}, TimeZone: "Local"}, "spec.time_zone"},
		{&stewardv1.ScheduleSpec{Every: &stewardv1.ScheduleSpec_Interval{Interval: durationpb.New(500 * time.Millisecond)}}, "spec.interval"},
		{&stewardv1.ScheduleSpec{Every: &stewardv1.ScheduleSpec_Interval{Interval: durationpb.New(1500 * time.Millisecond)}}, "spec.interval"},
		{&stewardv1.ScheduleSpec{Every: &stewardv1.ScheduleSpec_Cron{Cron: "* * * * *"}, EndTime: timestamppb.New(created)}, "spec.end_time"},
	} {
		_, err := schedule.ParseSpec(tc.spec, created)
		var e *errs.Error
		if !errs.Is(err, errs.Invalid) || !asErr(err, &e) || e.Field != tc.field {
			t.Errorf("ParseSpec(%v) = %v, want invalid %s", tc.spec, err, tc.field)
		}
	}
	never := cronSpec(t, "0 0 30 2 *", "", created)
	if n := never.Next(created); !n.IsZero() {
		t.Fatalf("Feb 30 fires at %s", n)
	}
}

// An interval whose start is more than a time.Duration (292 years) before
// now still fires after now, on its grid: not at a time before it.
func TestIntervalStartCenturiesAgo(t *testing.T) {
	created := time.Date(2026, 5, 1, 9, 30, 0, 0, time.UTC)
	start := time.Date(1600, 1, 1, 0, 0, 0, 0, time.UTC)
	spec, err := schedule.ParseSpec(&stewardv1.ScheduleSpec{
		Every: &stewardv1.ScheduleSpec_Interval{Interval: durationpb.New(time.Hour)}, StartTime: timestamppb.New(start),
	}, created)
	if err != nil {
		t.Fatal(err)
	}
	if next, want := spec.Next(created), created.Add(30*time.Minute); !next.Equal(want) {
		t.Errorf("Next(%s) = %s, want %s", created, next, want)
	}
	ds := schedule.Decide(schedule.Tick{Spec: spec, Rules: schedule.Rules{CatchUp: last, Overlap: skip}, DueAfter: created, Now: created.Add(90 * time.Minute)})
	if len(ds) != 2 || ds[0].MissedCount != 1 || !ds[1].Firing.Equal(created.Add(90*time.Minute)) {
		t.Errorf("Decide = %s, want 1 missed (10:00) and 11:00 started", decided(ds))
	}
}
