package schedule

import (
	"time"

	"github.com/steward-run/steward/pkg/errs"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// Limits on what one tick does.
const (
	// MaxCatchUp is the most missed firings ALL_WITHIN runs in one go;
	// older ones are missed.
	MaxCatchUp = 100
	// MaxQueue is the largest queue_limit.
	MaxQueue = 100
	// maxDueWalk bounds the walk over the firings due at a tick. An
	// interval's firings past it are counted without a walk; a cron's walk
	// resumes just before now (see Spec.lookback), and the firings between
	// are not counted (missed_count is then short of the true count).
	maxDueWalk = 1_000_000
)

// Rules are a schedule's catch-up rule and overlap policy, checked.
type Rules struct {
	CatchUp    stewardv1.CatchUpRule
	Window     time.Duration
	Overlap    stewardv1.OverlapPolicy
	QueueLimit int
}

// ParseRules checks a schedule's catch-up rule and overlap policy, filling
// in defaults (NONE, SKIP, a queue of 1). Errors name the field.
func ParseRules(c *stewardv1.CatchUp, o *stewardv1.Overlap) (Rules, error) {
	r := Rules{CatchUp: c.GetRule(), Overlap: o.GetPolicy(), QueueLimit: int(o.GetQueueLimit())}
	switch r.CatchUp {
	case stewardv1.CatchUpRule_CATCH_UP_RULE_UNSPECIFIED:
		r.CatchUp = stewardv1.CatchUpRule_CATCH_UP_RULE_NONE
	case stewardv1.CatchUpRule_CATCH_UP_RULE_NONE, stewardv1.CatchUpRule_CATCH_UP_RULE_LAST:
	case stewardv1.CatchUpRule_CATCH_UP_RULE_ALL_WITHIN:
		r.Window = c.GetWindow().AsDuration()
		if r.Window < time.Second {
			return Rules{}, errs.Field("catch_up.window", "must be at least 1s for ALL_WITHIN")
		}
	default:
		return Rules{}, errs.Field("catch_up.rule", "%d is not a catch-up rule", r.CatchUp)
	}
	if c.GetWindow() != nil && r.CatchUp != stewardv1.CatchUpRule_CATCH_UP_RULE_ALL_WITHIN {
		return Rules{}, errs.Field("catch_up.window", "is for ALL_WITHIN only")
	}
	switch r.Overlap {
	case stewardv1.OverlapPolicy_OVERLAP_POLICY_UNSPECIFIED:
		r.Overlap = stewardv1.OverlapPolicy_OVERLAP_POLICY_SKIP
	case stewardv1.OverlapPolicy_OVERLAP_POLICY_SKIP, stewardv1.OverlapPolicy_OVERLAP_POLICY_CANCEL_PREVIOUS:
	case stewardv1.OverlapPolicy_OVERLAP_POLICY_QUEUE:
		r.QueueLimit = max(r.QueueLimit, 1)
	default:
		return Rules{}, errs.Field("overlap.policy", "%d is not an overlap policy", r.Overlap)
	}
	if r.QueueLimit > MaxQueue || (r.QueueLimit > 0 && r.Overlap != stewardv1.OverlapPolicy_OVERLAP_POLICY_QUEUE && o.GetQueueLimit() > 0) {
		return Rules{}, errs.Field("overlap.queue_limit", "is for QUEUE only, at most %d", MaxQueue)
	}
	return r, nil
}

// Decision is one thing a tick does, in order.
type Decision struct {
	Firing      time.Time
	Disposition stewardv1.FiringDisposition
	// StartQueued: start the queued firing Firing (ScheduleRunStarted),
	// not a new one.
	StartQueued bool
	// For MISSED: how many firings, the first at MissedFrom, the last at
	// Firing.
	MissedCount int
	MissedFrom  time.Time
	Reason      string
}

// Runs reports whether d creates a run.
func (d Decision) Runs() bool {
	return d.StartQueued || d.Disposition == stewardv1.FiringDisposition_FIRING_DISPOSITION_STARTED ||
		d.Disposition == stewardv1.FiringDisposition_FIRING_DISPOSITION_CANCELLED_PREVIOUS
}

// Tick is what a tick knows besides the rules: the spec, where firings
// are due from, the queue, the time, and whether the latest run has not
// ended yet.
type Tick struct {
	Spec           Spec
	Rules          Rules
	DueAfter       time.Time
	Queued         []time.Time
	Now            time.Time
	PreviousActive bool
}

// Decide returns what a tick does, in order: first a queued firing to
// start if the previous run has ended, then the due firings (those after
// DueAfter and not after Now) the catch-up rule does not run, as one
// MISSED decision, then each due firing it runs, oldest first, with its
// disposition under the overlap policy. A caller records each decision
// and decides again (the record moves DueAfter and the queue), so doing
// the first decision and deciding again gives the rest.
func Decide(t Tick) []Decision {
	var out []Decision
	active, queued := t.PreviousActive, len(t.Queued)
	if !active && queued > 0 {
		out = append(out, Decision{Firing: t.Queued[0], Disposition: stewardv1.FiringDisposition_FIRING_DISPOSITION_STARTED, StartQueued: true})
		active, queued = true, queued-1
	}
	run, missed := t.due()
	if missed.MissedCount > 0 {
		out = append(out, missed)
	}
	for i, f := range run {
		d := Decision{Firing: f}
		switch {
		case t.Rules.Overlap == stewardv1.OverlapPolicy_OVERLAP_POLICY_CANCEL_PREVIOUS && i < len(run)-1:
			d.Disposition, d.Reason = stewardv1.FiringDisposition_FIRING_DISPOSITION_SKIPPED, "a later firing of the same catch-up supersedes it"
		case !active:
			d.Disposition = stewardv1.FiringDisposition_FIRING_DISPOSITION_STARTED
		case t.Rules.Overlap == stewardv1.OverlapPolicy_OVERLAP_POLICY_CANCEL_PREVIOUS:
			d.Disposition = stewardv1.FiringDisposition_FIRING_DISPOSITION_CANCELLED_PREVIOUS
		case t.Rules.Overlap == stewardv1.OverlapPolicy_OVERLAP_POLICY_QUEUE && queued < t.Rules.QueueLimit:
			d.Disposition = stewardv1.FiringDisposition_FIRING_DISPOSITION_QUEUED
			queued++
		default:
			d.Disposition, d.Reason = stewardv1.FiringDisposition_FIRING_DISPOSITION_SKIPPED, "the previous run has not ended"
		}
		if d.Runs() {
			active = true
		}
		out = append(out, d)
	}
	return out
}

// due splits the firings due at the tick into those the catch-up rule
// runs — always a suffix: the newest — and the rest, as one MISSED
// decision.
func (t Tick) due() (run []time.Time, missed Decision) {
	first := t.Spec.Next(t.DueAfter)
	from, total := t.Spec.skip(t.DueAfter, t.Now, maxDueWalk)
	var recent []time.Time // the newest MaxCatchUp+1 at least
	for walks, walked := 0, 0; walks < 2; walks, walked = walks+1, 0 {
		for f := range t.Spec.Firings(from) {
			if f.After(t.Now) || walked == maxDueWalk {
				break
			}
			if len(recent) == 2*(MaxCatchUp+1) {
				recent = append(recent[:0], recent[MaxCatchUp+1:]...)
			}
			recent = append(recent, f)
			total++
			walked++
		}
		if walked < maxDueWalk {
			break
		}
		// Walked as far as a tick walks and not yet at now: on from
		// just before now, so that the newest firings are the ones seen.
		from = t.Spec.lookback(recent[len(recent)-1], t.Now, MaxCatchUp+1)
	}
	if total == 0 || first.IsZero() || first.After(t.Now) {
		return nil, Decision{}
	}
	last := recent[len(recent)-1]
	onTime := t.Now.Sub(last) <= t.Spec.Grace(last)
	keep := 0
	switch {
	case t.Rules.CatchUp == stewardv1.CatchUpRule_CATCH_UP_RULE_ALL_WITHIN:
		for i := len(recent) - 1; i >= 0 && keep < MaxCatchUp && (t.Now.Sub(recent[i]) <= t.Rules.Window || i == len(recent)-1 && onTime); i-- {
			keep++
		}
	case t.Rules.CatchUp == stewardv1.CatchUpRule_CATCH_UP_RULE_LAST || onTime:
		keep = 1
	}
	run = recent[len(recent)-keep:]
	if n := total - keep; n > 0 {
		missed = Decision{
			Firing: recent[len(recent)-keep-1], Disposition: stewardv1.FiringDisposition_FIRING_DISPOSITION_MISSED,
			MissedCount: n, MissedFrom: first, Reason: "due while Steward was down, and the catch-up rule does not run it",
		}
	}
	return run, missed
}

// TickAt returns the tick of schedule s at now; previousActive says
// whether its latest run has not ended yet.
func TickAt(s *stewardv1.Schedule, now time.Time, previousActive bool) (Tick, error) {
	spec, err := ParseSpec(s.Spec, s.CreatedAt.AsTime())
	if err != nil {
		return Tick{}, err
	}
	rules, err := ParseRules(s.CatchUp, s.Overlap)
	if err != nil {
		return Tick{}, err
	}
	t := Tick{Spec: spec, Rules: rules, DueAfter: s.DueAfter.AsTime(), Now: now, PreviousActive: previousActive}
	for _, q := range s.Queued {
		t.Queued = append(t.Queued, q.AsTime())
	}
	return t, nil
}
