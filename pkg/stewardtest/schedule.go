package stewardtest

import (
	"fmt"
	"strings"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// HourlySchedule is the request for a schedule that runs contract every
// hour under a catch-up rule (with its window, if not zero) and an overlap
// policy (with its queue limit).
func HourlySchedule(contract *stewardv1.TaskContract, rule stewardv1.CatchUpRule, window time.Duration, policy stewardv1.OverlapPolicy, queue uint32) *stewardv1.CreateScheduleRequest {
	req := &stewardv1.CreateScheduleRequest{
		Spec:     &stewardv1.ScheduleSpec{Every: &stewardv1.ScheduleSpec_Interval{Interval: durationpb.New(time.Hour)}},
		Template: &stewardv1.ScheduleTemplate{Contract: contract},
		CatchUp:  &stewardv1.CatchUp{Rule: rule},
		Overlap:  &stewardv1.Overlap{Policy: policy, QueueLimit: queue},
	}
	if window > 0 {
		req.CatchUp.Window = durationpb.New(window)
	}
	return req
}

// Firings renders a schedule's firings, their times by at, so that a test
// compares them as one string: "+2h queued", "3 missed +2h..+4h".
func Firings(fs []*stewardv1.ScheduleFiring, at func(time.Time) string) string {
	var out []string
	for _, f := range fs {
		if f.MissedCount > 0 {
			out = append(out, fmt.Sprintf("%d missed %s..%s", f.MissedCount, at(f.MissedFrom.AsTime()), at(f.FiringTime.AsTime())))
			continue
		}
		out = append(out, at(f.FiringTime.AsTime())+" "+strings.ToLower(strings.TrimPrefix(f.Disposition.String(), "FIRING_DISPOSITION_")))
	}
	return strings.Join(out, ", ")
}

// HoursAfter renders a time in hours after t0, to the minute: "+2h".
func HoursAfter(t0 time.Time) func(time.Time) string {
	return func(at time.Time) string { return fmt.Sprintf("+%gh", at.Sub(t0).Round(time.Minute).Hours()) }
}

// CatchUpCase is a catch-up rule and the firings it records (Firings,
// in hours after the schedule's creation) when an hourly schedule whose
// first run ended at +1h is down until +6h20m, its overlap policy skip.
type CatchUpCase struct {
	Name   string
	Rule   stewardv1.CatchUpRule
	Window time.Duration
	Want   string
}

// CatchUpCases are the catch-up rules after a downtime of five intervals
// and more, as a restart in one process and a kill -9 of the binary both
// see them.
func CatchUpCases() []CatchUpCase {
	return []CatchUpCase{
		{"none", stewardv1.CatchUpRule_CATCH_UP_RULE_NONE, 0, "5 missed +2h..+6h"},
		{"last", stewardv1.CatchUpRule_CATCH_UP_RULE_LAST, 0, "4 missed +2h..+5h, +6h started"},
		// The run of +4h goes on when +5h and +6h are decided.
		{"all within 2h30m", stewardv1.CatchUpRule_CATCH_UP_RULE_ALL_WITHIN, 150 * time.Minute, "2 missed +2h..+3h, +4h started, +5h skipped, +6h skipped"},
	}
}
