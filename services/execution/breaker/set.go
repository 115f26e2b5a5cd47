package breaker

import (
	"slices"
	"strings"
	"sync"
	"time"
)

// Transition is a change of one breaker's state, for the caller to record
// as an event.
type Transition struct {
	Key      string
	From, To State
	// Requests and Failures are the counted outcomes that caused the
	// change: the window's when a closed breaker opens, the probe's when a
	// half-open one closes or opens again, none when an open one turns
	// half-open.
	Requests, Failures int
	At                 time.Time
	// Until is the end of the cool-down when To is Open.
	Until time.Time
}

// Status is one breaker's state at a moment.
type Status struct {
	Key   string
	State State
	// Until is the end of the cool-down when State is Open.
	Until time.Time
	// Requests and Failures are the counts in the window while closed, and
	// the counts that last opened the breaker otherwise.
	Requests, Failures int
}

// Set holds one breaker per service key. It is safe for concurrent use.
// Breakers are created when a key's first outcome is recorded, and closed
// breakers with nothing in their window are dropped now and then, so the
// Set's size follows the services in recent use.
type Set struct {
	cfg Config
	// tuned are the keys whose breakers follow a configuration of their
	// own (Tune): a tool contract's thresholds.
	tuned map[string]Config

	// One lock for all breakers: each call does a few comparisons under
	// it, far less than the dispatch it guards.
	mu        sync.Mutex
	breakers  map[string]*breaker
	lastSweep time.Time
}

// New returns an empty Set whose breakers follow cfg, zero fields taking
// their defaults. New panics if cfg.Validate fails: a bad configuration is
// a programming or deployment error to catch at startup.
func New(cfg Config) *Set {
	if err := cfg.Validate(); err != nil {
		panic(err)
	}
	return &Set{cfg: cfg.WithDefaults(), breakers: make(map[string]*breaker), tuned: make(map[string]Config)}
}

// Tune makes key's breaker follow c from now on, c's zero fields taking
// the Set's; a zero c gives it back the Set's. A c that does not validate
// changes nothing and is returned as the error.
func (s *Set) Tune(key string, c Config) error {
	if err := c.Validate(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if c == (Config{}) {
		delete(s.tuned, key)
		return nil
	}
	s.tuned[key] = c.over(s.cfg)
	return nil
}

// cfgFor is the configuration key's breaker follows. The caller holds
// s.mu.
func (s *Set) cfgFor(key string) Config {
	if c, ok := s.tuned[key]; ok {
		return c
	}
	return s.cfg
}

// Allow says whether a call to key may go out at now. When it may not,
// retryAt says when to ask again: the end of the cool-down while open, a
// short wait while half-open probes are out. When a cool-down has ended,
// Allow turns the breaker half-open and returns that Transition.
//
// A call Allow lets through must have its outcome recorded with Record; a
// half-open breaker presumes a probe lost after a cool-down without one.
func (s *Set) Allow(key string, now time.Time) (ok bool, retryAt time.Time, tr *Transition) {
	s.mu.Lock()
	defer s.mu.Unlock()
	b := s.breakers[key]
	if b == nil {
		return true, time.Time{}, nil
	}
	return b.allow(key, s.cfgFor(key), now)
}

// Record counts the outcome of a call to key that Allow let through, and
// returns the Transition it causes, if any. An Outcome other than the three
// constants counts as a Failure. Outcomes that arrive while the
// breaker is open, from calls let through before it opened, are ignored.
func (s *Set) Record(key string, o Outcome, now time.Time) *Transition {
	if o != Success && o != Neutral {
		o = Failure // an outcome the caller could not name is an unknown one
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sweep(now)
	b := s.breakers[key]
	if b == nil {
		if o == Neutral {
			return nil // nothing to count; no need for a breaker
		}
		b = newBreaker(s.cfgFor(key))
		s.breakers[key] = b
	}
	return b.record(key, s.cfgFor(key), o, now)
}

// State reports key's state at now and, when open, the end of its
// cool-down. Unknown keys are Closed. An open breaker whose cool-down has
// ended reports HalfOpen, though the Transition waits for the next Allow.
func (s *Set) State(key string, now time.Time) (State, time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	b := s.breakers[key]
	if b == nil {
		return Closed, time.Time{}
	}
	st := b.status(key, now)
	return st.State, st.Until
}

// Snapshot lists every breaker that is not closed at now, sorted by key.
func (s *Set) Snapshot(now time.Time) []Status {
	s.mu.Lock()
	var out []Status
	for key, b := range s.breakers {
		if b.state != Closed {
			out = append(out, b.status(key, now))
		}
	}
	s.mu.Unlock()
	slices.SortFunc(out, func(a, b Status) int { return strings.Compare(a.Key, b.Key) })
	return out
}

// sweep drops idle breakers at most once a window, so its cost is spread
// thin over the calls that trigger it. The caller holds s.mu.
func (s *Set) sweep(now time.Time) {
	if now.Sub(s.lastSweep) < s.cfg.Window {
		return
	}
	s.lastSweep = now
	for key, b := range s.breakers {
		if b.idle(now) {
			delete(s.breakers, key)
		}
	}
}
