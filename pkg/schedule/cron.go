package schedule

import (
	"fmt"
	"math/bits"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Cron is a parsed five-field cron expression: minute, hour, day of month,
// month, day of week (0 or 7 is Sunday). Each field is a list of values,
// ranges (a-b), steps (*/n, a-b/n) or *. As in Vixie cron, when both the
// day of month and the day of week are restricted a day matches either.
//
// It is written here rather than taken from github.com/robfig/cron/v3
// (v3.0.1): that parser skips a daily 02:30 on a spring-forward day and
// fires a daily 01:30 twice on a fall-back day (America/New_York,
// 2026-03-08 and 2026-11-01), and a daily job must fire once a day.
type Cron struct {
	minute, hour, dom, month, dow uint64 // bit i set: value i matches
	// everyHour: the hour field is *, so a repeated wall hour (fall-back)
	// fires on both occurrences — an hourly cron fires every real hour.
	everyHour      bool
	domAll, dowAll bool
	text           string
}

// cronFields are the five fields' names and bounds.
var cronFields = [5]struct {
	name     string
	min, max int
}{{"minute", 0, 59}, {"hour", 0, 23}, {"day of month", 1, 31}, {"month", 1, 12}, {"day of week", 0, 7}}

// ParseCron parses a five-field cron expression.
func ParseCron(text string) (*Cron, error) {
	fields := strings.Fields(text)
	if len(fields) != 5 {
		return nil, fmt.Errorf("want 5 fields (minute hour day-of-month month day-of-week), have %d", len(fields))
	}
	var sets [5]uint64
	for i, f := range fields {
		set, err := parseField(f, cronFields[i].min, cronFields[i].max)
		if err != nil {
			return nil, fmt.Errorf("%s field %q: %w", cronFields[i].name, f, err)
		}
		sets[i] = set
	}
	if sets[4]&(1<<7) != 0 { // 7 is Sunday too
		sets[4] = sets[4]&^(1<<7) | 1
	}
	c := &Cron{minute: sets[0], hour: sets[1], dom: sets[2], month: sets[3], dow: sets[4], text: strings.Join(fields, " ")}
	c.everyHour = fields[1] == "*"
	c.domAll, c.dowAll = strings.HasPrefix(fields[2], "*"), strings.HasPrefix(fields[4], "*")
	return c, nil
}

// String returns the expression, its fields separated by one space.
func (c *Cron) String() string { return c.text }

// parseField parses one field's comma-separated items into a bit set.
func parseField(f string, lo, hi int) (uint64, error) {
	var set uint64
	for item := range strings.SplitSeq(f, ",") {
		rng, stepText, hasStep := strings.Cut(item, "/")
		step := 1
		if hasStep {
			n, err := strconv.Atoi(stepText)
			if err != nil || n < 1 || n > hi {
				return 0, fmt.Errorf("step %q is not a number from 1 to %d", stepText, hi)
			}
			step = n
		}
		from, to := lo, hi
		switch a, b, isRange := strings.Cut(rng, "-"); {
		case rng == "*":
		case isRange:
			var err error
			if from, err = value(a, lo, hi); err != nil {
				return 0, err
			}
			if to, err = value(b, lo, hi); err != nil {
				return 0, err
			}
			if to < from {
				return 0, fmt.Errorf("range %s ends before it starts", rng)
			}
		default:
			v, err := value(rng, lo, hi)
			if err != nil {
				return 0, err
			}
			from, to = v, v
			if hasStep {
				to = hi // "5/15" is "5-max/15"
			}
		}
		for v := from; v <= to; v += step {
			set |= 1 << v
		}
	}
	return set, nil
}

func value(s string, lo, hi int) (int, error) {
	v, err := strconv.Atoi(s)
	if err != nil || v < lo || v > hi {
		return 0, fmt.Errorf("%q is not a number from %d to %d", s, lo, hi)
	}
	return v, nil
}

// dayMatches reports whether the calendar day d (any time on it) matches.
func (c *Cron) dayMatches(y int, m time.Month, d int, wd time.Weekday) bool {
	if c.month&(1<<int(m)) == 0 {
		return false
	}
	dom, dow := c.dom&(1<<d) != 0, c.dow&(1<<int(wd)) != 0
	if c.domAll || c.dowAll {
		return dom && dow
	}
	return dom || dow
}

// firingsOn returns the instants at which c fires on the calendar day
// (y, m, d) of loc, in order. Wall times are resolved in loc: a time the
// clocks skip (spring forward) fires at the instant it would have been
// before the change (02:30 EST is 03:30 EDT), once; a time the clocks
// repeat (fall back) fires on its first occurrence only, unless the hour
// field is *, when it fires on both.
func (c *Cron) firingsOn(y int, m time.Month, d int, loc *time.Location) []time.Time {
	noon := time.Date(y, m, d, 12, 0, 0, 0, loc)
	if !c.dayMatches(y, m, d, noon.Weekday()) {
		return nil
	}
	var out []time.Time
	for hours := c.hour; hours != 0; hours &= hours - 1 {
		h := bits.TrailingZeros64(hours)
		for mins := c.minute; mins != 0; mins &= mins - 1 {
			out = append(out, wallInstants(y, m, d, h, bits.TrailingZeros64(mins), loc, c.everyHour)...)
		}
	}
	return sortedUnique(out)
}

// wallInstants resolves the wall time y-m-d h:min in loc (see firingsOn).
func wallInstants(y int, m time.Month, d, h, minute int, loc *time.Location, both bool) []time.Time {
	wall := time.Date(y, m, d, h, minute, 0, 0, time.UTC)
	_, before := wall.Add(-36 * time.Hour).In(loc).Zone() // offsets either side of any change that day
	_, after := wall.Add(36 * time.Hour).In(loc).Zone()
	var out []time.Time
	for _, off := range []int{before, after} {
		t := wall.Add(-time.Duration(off) * time.Second)
		if isWall(t, loc, wall) {
			out = append(out, t)
		}
	}
	out = sortedUnique(out)
	switch {
	case len(out) == 0: // skipped by a spring forward
		return []time.Time{wall.Add(-time.Duration(before) * time.Second)}
	case len(out) == 2 && !both:
		return out[:1]
	}
	return out
}

func isWall(t time.Time, loc *time.Location, wall time.Time) bool {
	l := t.In(loc)
	y, m, d := l.Date()
	return y == wall.Year() && m == wall.Month() && d == wall.Day() && l.Hour() == wall.Hour() && l.Minute() == wall.Minute()
}

// sortedUnique sorts ts and drops repeats.
func sortedUnique(ts []time.Time) []time.Time {
	slices.SortFunc(ts, time.Time.Compare)
	return slices.CompactFunc(ts, time.Time.Equal)
}
