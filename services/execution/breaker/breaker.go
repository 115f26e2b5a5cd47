// Package breaker keeps a circuit breaker per service key for the execution
// plane. A tool contract names the service it calls; every dispatch asks the
// service's breaker first and records what the call came to, so a service
// that keeps failing is given time to recover instead of more load.
//
// A breaker is closed while the share of failures in a sliding window stays
// under the configured rate. Past it, the breaker opens and refuses calls for
// a cool-down; then it turns half-open and lets a few probe calls through. A
// probe that succeeds closes the breaker, one that fails opens it again.
//
// The package does no I/O and never reads the clock: every call takes the
// time, so the caller decides what now is and tests are deterministic. State
// changes are returned as Transitions for the caller to record as events.
package breaker

import "time"

// breaker is one service's state machine. Its methods are not safe for
// concurrent use; Set serialises them.
type breaker struct {
	state  State
	window window // outcomes while closed

	// until is the end of the cool-down while open.
	until time.Time
	// tripRequests and tripFailures are the counts that opened the breaker,
	// kept to report while it is not closed.
	tripRequests, tripFailures int

	// probes is how many probes are out while half-open, and probesUntil
	// when they are presumed lost: a caller that never records a probe's
	// outcome must not hold the breaker half-open for ever.
	probes      int
	probesUntil time.Time
}

func newBreaker(cfg Config) *breaker {
	return &breaker{window: newWindow(cfg.Window)}
}

// allow decides whether a call may go out at now.
func (b *breaker) allow(key string, cfg Config, now time.Time) (bool, time.Time, *Transition) {
	var tr *Transition
	switch b.state {
	case Closed:
		return true, time.Time{}, nil
	case Open:
		if now.Before(b.until) {
			return false, b.until, nil
		}
		tr = b.transition(key, HalfOpen, 0, 0, now)
		b.probes = 0
	}
	if b.probes > 0 && !now.Before(b.probesUntil) {
		b.probes = 0 // presumed lost; see probesUntil
	}
	if b.probes >= cfg.HalfOpenProbes {
		return false, now.Add(cfg.probeWait()), tr
	}
	b.probes++
	b.probesUntil = now.Add(cfg.CoolDown)
	return true, time.Time{}, tr
}

// record counts an outcome at now.
func (b *breaker) record(key string, cfg Config, o Outcome, now time.Time) *Transition {
	if o == Neutral {
		if b.state == HalfOpen && b.probes > 0 {
			b.probes-- // the probe learnt nothing; let another go
		}
		return nil
	}
	switch b.state {
	case Closed:
		b.window.add(now, o == Failure)
		requests, failures := b.window.counts(now)
		if requests < cfg.MinRequests || float64(failures) < cfg.FailureRate*float64(requests) {
			return nil
		}
		return b.open(key, cfg, requests, failures, now)
	case HalfOpen:
		// Without a probe out, this is a late answer to a call let through
		// before the breaker opened; it says nothing about the service now.
		if b.probes == 0 {
			return nil
		}
		b.probes--
		if o == Failure {
			return b.open(key, cfg, 1, 1, now)
		}
		tr := b.transition(key, Closed, 1, 0, now)
		b.window.reset()
		b.tripRequests, b.tripFailures = 0, 0
		b.probes = 0
		return tr
	}
	// Open: a late answer to a call let through before the breaker opened.
	return nil
}

// open moves the breaker to Open for a cool-down from now.
func (b *breaker) open(key string, cfg Config, requests, failures int, now time.Time) *Transition {
	b.until = now.Add(cfg.CoolDown)
	tr := b.transition(key, Open, requests, failures, now)
	b.tripRequests, b.tripFailures = requests, failures
	b.window.reset()
	b.probes = 0
	return tr
}

// transition moves the breaker to state to and describes the move.
func (b *breaker) transition(key string, to State, requests, failures int, now time.Time) *Transition {
	tr := &Transition{Key: key, From: b.state, To: to, Requests: requests, Failures: failures, At: now}
	if to == Open {
		tr.Until = b.until
	}
	b.state = to
	return tr
}

// status reports the breaker's state at now without changing it: an open
// breaker whose cool-down has ended reports HalfOpen, since the next call
// would be let through as a probe.
func (b *breaker) status(key string, now time.Time) Status {
	st := Status{Key: key, State: b.state, Requests: b.tripRequests, Failures: b.tripFailures}
	switch {
	case b.state == Closed:
		st.Requests, st.Failures = b.window.counts(now)
	case b.state == Open && now.Before(b.until):
		st.Until = b.until
	default:
		st.State = HalfOpen
	}
	return st
}

// idle reports whether the breaker holds nothing worth keeping at now.
func (b *breaker) idle(now time.Time) bool {
	if b.state != Closed {
		return false
	}
	requests, _ := b.window.counts(now)
	return requests == 0
}
