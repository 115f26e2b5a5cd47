// Package schedule is the pure core of schedules (docs/schedules.md):
// when a schedule fires (a cron expression in a time zone, or a fixed
// interval, between a start and an end), which of the firings due at a
// tick run under its catch-up rule and overlap policy, and the fold of a
// schedule's events into a Schedule. Nothing here reads a clock or does
// I/O: the control plane hands in the time. Everything is safe for
// concurrent use.
package schedule

import (
	"iter"
	"time"

	"github.com/steward-run/steward/pkg/errs"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// MinInterval is the shortest interval a schedule may fire at: timers
// fire on whole seconds.
const MinInterval = time.Second

// horizon bounds the search for a cron's next firing: a spec that matches
// no day in it ("0 0 30 2 *") never fires.
const horizon = 5 * 366

// Spec is a parsed ScheduleSpec: when a schedule fires.
type Spec struct {
	cron     *Cron
	interval time.Duration
	loc      *time.Location
	// start is the earliest firing; end, when not zero, the first time
	// that is too late for one.
	start, end time.Time
}

// ParseSpec checks pb and returns its Spec for a schedule created at
// created: an interval without a start_time first fires one interval after
// it, a cron not before it. Errors name the field, under "spec.".
func ParseSpec(pb *stewardv1.ScheduleSpec, created time.Time) (Spec, error) {
	if pb == nil {
		return Spec{}, errs.Field("spec", "is required")
	}
	s := Spec{loc: time.UTC, start: created}
	if pb.TimeZone != "" {
		loc, err := time.LoadLocation(pb.TimeZone)
		if err != nil || pb.TimeZone == "Local" {
			return Spec{}, errs.Field("spec.time_zone", "%s is not an IANA time zone name", errs.Quote(pb.TimeZone))
		}
		s.loc = loc
	}
	switch every := pb.Every.(type) {
	case *stewardv1.ScheduleSpec_Cron:
		c, err := ParseCron(every.Cron)
		if err != nil {
			return Spec{}, errs.Field("spec.cron", "%s", err)
		}
		s.cron = c
	case *stewardv1.ScheduleSpec_Interval:
		s.interval = every.Interval.AsDuration()
		if s.interval < MinInterval || s.interval%time.Second != 0 {
			return Spec{}, errs.Field("spec.interval", "%s is not a whole number of seconds of at least %s", s.interval, MinInterval)
		}
		s.start = created.Add(s.interval)
	default:
		return Spec{}, errs.Field("spec", "needs cron or interval")
	}
	if pb.StartTime != nil {
		s.start = pb.StartTime.AsTime()
	}
	// On a whole second: timers fire on whole seconds, and an interval's
	// firings keep the start's fraction.
	if frac := s.start.Sub(s.start.Truncate(time.Second)); frac > 0 {
		s.start = s.start.Add(time.Second - frac)
	}
	if pb.EndTime != nil {
		s.end = pb.EndTime.AsTime()
		if !s.end.After(s.start) {
			return Spec{}, errs.Field("spec.end_time", "is not after the start (%s)", s.start.UTC().Format(time.RFC3339))
		}
	}
	return s, nil
}

// Location returns the time zone the spec is read in.
func (s Spec) Location() *time.Location { return s.loc }

// Next returns the first firing after t, or the zero time if there is none
// (past the end, or a cron that matches no day).
func (s Spec) Next(t time.Time) time.Time {
	for f := range s.Firings(t) {
		return f
	}
	return time.Time{}
}

// Firings yields the firings after t in order, until the end.
func (s Spec) Firings(after time.Time) iter.Seq[time.Time] {
	return func(yield func(time.Time) bool) {
		for f := range s.unbounded(after) {
			if !s.end.IsZero() && !f.Before(s.end) {
				return
			}
			if !yield(f) {
				return
			}
		}
	}
}

// unbounded yields the firings after t and not before the start.
func (s Spec) unbounded(after time.Time) iter.Seq[time.Time] {
	if s.cron == nil {
		return func(yield func(time.Time) bool) {
			for f := s.firing(s.index(after)); yield(f); f = f.Add(s.interval) {
			}
		}
	}
	if after.Before(s.start) {
		after = s.start.Add(-time.Nanosecond)
	}
	return func(yield func(time.Time) bool) {
		y, m, d := after.In(s.loc).Date()
		empty := 0
		for day := time.Date(y, m, d, 12, 0, 0, 0, time.UTC); empty < horizon; day = day.AddDate(0, 0, 1) {
			fs := s.cron.firingsOn(day.Year(), day.Month(), day.Day(), s.loc)
			empty++
			if len(fs) > 0 {
				empty = 0
			}
			for _, f := range fs {
				if f.After(after) && !yield(f) {
					return
				}
			}
		}
	}
}

// MinGrace is the least grace a firing has: what a timer's delivery may
// take on a loaded machine.
const MinGrace = 2 * time.Second

// Grace is how late firing f may start and still count as on time: a
// minute, or half the time to the next firing if that is shorter, but at
// least MinGrace.
func (s Spec) Grace(f time.Time) time.Duration {
	grace := time.Minute
	if next := s.Next(f); !next.IsZero() {
		grace = min(grace, next.Sub(f)/2)
	}
	return max(grace, MinGrace)
}

// skip returns where a walk over the firings after `after`, up to now,
// starts so that it sees at most limit of them, the newest, and how many
// it skips: an interval's are counted, not walked; a cron's are not
// skipped here (0).
func (s Spec) skip(after, now time.Time, limit int) (time.Time, int) {
	if s.cron == nil {
		upTo := now
		if !s.end.IsZero() && !upTo.Before(s.end) {
			upTo = s.end.Add(-time.Nanosecond)
		}
		if n := s.index(upTo) - s.index(after); n > limit {
			skipped := n - limit
			return s.firing(s.index(after) + skipped - 1), skipped
		}
	}
	return after, 0
}

// index returns how many of an interval's firings are not after t. In
// whole seconds, as the start and the interval are: a time.Duration spans
// only 292 years, and a start_time may be further back.
func (s Spec) index(t time.Time) int {
	if t.Before(s.start) {
		return 0
	}
	return int((t.Unix()-s.start.Unix())/int64(s.interval/time.Second)) + 1
}

// firing returns an interval's firing k (from 0, the start).
func (s Spec) firing(k int) time.Time {
	return time.Unix(s.start.Unix()+int64(k)*int64(s.interval/time.Second), 0).In(s.start.Location())
}

// lookback returns a time after floor and before now after which at
// least n firings are due up to now, or floor if there is none: an hour
// back, doubled until enough.
func (s Spec) lookback(floor, now time.Time, n int) time.Time {
	for back := time.Hour; back > 0; back *= 2 {
		from := now.Add(-back)
		if !from.After(floor) {
			break
		}
		seen := 0
		for f := range s.Firings(from) {
			if f.After(now) || seen == n {
				break
			}
			seen++
		}
		if seen == n {
			return from
		}
	}
	return floor
}
