package breaker_test

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/steward-run/steward/services/execution/breaker"
)

const sec = time.Second

// t0 is a multiple of the default bucket width (3s), so window edges fall
// on whole seconds from it.
var t0 = time.Unix(1_800_000_000, 0)

// step is one call in a scenario, with what it should return and the state
// the key should be in right after.
type step struct {
	at    time.Duration // since t0
	key   string        // "svc" when empty
	allow bool          // call Allow, else Record(o)
	o     breaker.Outcome
	want  string // Allow's answer: "ok" or "wait <retryAt since t0>"
	tr    string // the Transition, as describe writes it, or ""
	state breaker.State
	n     int // times to repeat the step; 1 when zero
}

func allow(at time.Duration, want string, state breaker.State, tr string) step {
	return step{at: at, allow: true, want: want, state: state, tr: tr}
}

func record(at time.Duration, o breaker.Outcome, state breaker.State, tr string) step {
	return step{at: at, o: o, state: state, tr: tr}
}

func (s step) times(n int) step { s.n = n; return s }

func (s step) on(key string) step { s.key = key; return s }

// describe writes tr compactly, times relative to t0.
func describe(tr *breaker.Transition) string {
	if tr == nil {
		return ""
	}
	d := fmt.Sprintf("%s %v→%v %d/%d at %v", tr.Key, tr.From, tr.To, tr.Failures, tr.Requests, tr.At.Sub(t0))
	if !tr.Until.IsZero() {
		d += fmt.Sprintf(" until %v", tr.Until.Sub(t0))
	}
	return d
}

// Shorthands for the scenario tables.
const (
	closed   = breaker.Closed
	open     = breaker.Open
	halfOpen = breaker.HalfOpen
	ok       = breaker.Success
	fail     = breaker.Failure
	neutral  = breaker.Neutral
)

// openAt4s is the steps that open "svc" at 4s under the default config:
// five failures, one a second.
var openAt4s = []step{
	record(0, fail, closed, ""),
	record(1*sec, fail, closed, ""),
	record(2*sec, fail, closed, ""),
	record(3*sec, fail, closed, ""),
	record(4*sec, fail, open, "svc closed→open 5/5 at 4s until 14s"),
}

func then(prefix []step, rest ...step) []step {
	return append(append([]step(nil), prefix...), rest...)
}

func TestBreaker(t *testing.T) {
	tests := []struct {
		name  string
		cfg   breaker.Config
		steps []step
	}{
		{name: "unknown key is allowed", steps: []step{
			allow(0, "ok", closed, ""),
		}},
		{name: "stays closed under MinRequests", steps: []step{
			record(0, fail, closed, "").times(4),
			allow(1*sec, "ok", closed, ""),
		}},
		{name: "opens at MinRequests failures", steps: then(openAt4s,
			allow(5*sec, "wait 14s", open, ""),
		)},
		{name: "opens when the rate reaches the threshold", steps: []step{
			record(0, ok, closed, "").times(2),
			record(0, fail, closed, "").times(2),
			record(0, fail, open, "svc closed→open 3/5 at 0s until 10s"),
		}},
		{name: "a rate exactly at the threshold opens", cfg: breaker.Config{MinRequests: 4}, steps: []step{
			record(0, ok, closed, ""),
			record(0, fail, closed, ""),
			record(0, ok, closed, ""),
			record(0, fail, open, "svc closed→open 2/4 at 0s until 10s"),
		}},
		{name: "stays closed under the threshold", steps: []step{
			record(0, ok, closed, "").times(3),
			record(0, fail, closed, "").times(2),
			record(0, ok, closed, "").times(20),
			record(0, fail, closed, "").times(20),
		}},
		{name: "a success can complete a failing window", steps: []step{
			record(0, fail, closed, "").times(4),
			record(0, ok, open, "svc closed→open 4/5 at 0s until 10s"),
		}},
		{name: "neutral outcomes count nothing", steps: []step{
			record(0, neutral, closed, "").times(10),
			record(0, fail, closed, "").times(4),
			record(0, neutral, closed, "").times(10),
			record(0, fail, open, "svc closed→open 5/5 at 0s until 10s"),
		}},
		{name: "outcomes still in the window count", steps: []step{
			record(0, fail, closed, "").times(4),
			record(27*sec-1, fail, open, "svc closed→open 5/5 at 26.999999999s until 36.999999999s"),
		}},
		{name: "old failures age out of the window", steps: []step{
			record(0, fail, closed, "").times(4),
			record(30*sec, fail, closed, ""),
			record(31*sec, fail, closed, "").times(3),
			record(32*sec, fail, open, "svc closed→open 5/5 at 32s until 42s"),
		}},
		{name: "the window slides bucket by bucket", steps: []step{
			record(0, fail, closed, "").times(2),
			record(3*sec, fail, closed, "").times(2),
			record(30*sec, fail, closed, ""), // 3 in the window: those at 0s are out
			record(33*sec, fail, closed, ""), // 2: those at 3s are out too
			record(33*sec, fail, closed, "").times(2),
			record(33*sec, fail, open, "svc closed→open 5/5 at 33s until 43s"),
		}},
		{name: "open refuses until the cool-down ends", steps: then(openAt4s,
			allow(4*sec, "wait 14s", open, ""),
			allow(14*sec-1, "wait 14s", open, ""),
			allow(14*sec, "ok", halfOpen, "svc open→half-open 0/0 at 14s"),
		)},
		{name: "half-open lets one probe through", steps: then(openAt4s,
			allow(20*sec, "ok", halfOpen, "svc open→half-open 0/0 at 20s"),
			allow(20*sec, "wait 25s", halfOpen, ""),
			allow(21*sec, "wait 26s", halfOpen, ""),
		)},
		{name: "half-open lets HalfOpenProbes through", cfg: breaker.Config{HalfOpenProbes: 3, CoolDown: 4 * sec}, steps: then(openAt4s[:4],
			record(4*sec, fail, open, "svc closed→open 5/5 at 4s until 8s"),
			allow(8*sec, "ok", halfOpen, "svc open→half-open 0/0 at 8s"),
			allow(8*sec, "ok", halfOpen, "").times(2),
			allow(8*sec, "wait 10s", halfOpen, ""),
		)},
		{name: "probe success closes and clears the window", steps: then(openAt4s,
			allow(14*sec, "ok", halfOpen, "svc open→half-open 0/0 at 14s"),
			record(15*sec, ok, closed, "svc half-open→closed 0/1 at 15s"),
			allow(15*sec, "ok", closed, ""),
			record(15*sec, fail, closed, "").times(4),
			record(15*sec, fail, open, "svc closed→open 5/5 at 15s until 25s"),
		)},
		{name: "probe failure reopens for a new cool-down", steps: then(openAt4s,
			allow(14*sec, "ok", halfOpen, "svc open→half-open 0/0 at 14s"),
			record(15*sec, fail, open, "svc half-open→open 1/1 at 15s until 25s"),
			allow(16*sec, "wait 25s", open, ""),
			allow(25*sec, "ok", halfOpen, "svc open→half-open 0/0 at 25s"),
		)},
		{name: "a neutral probe lets another go", steps: then(openAt4s,
			allow(14*sec, "ok", halfOpen, "svc open→half-open 0/0 at 14s"),
			record(15*sec, neutral, halfOpen, ""),
			allow(15*sec, "ok", halfOpen, ""),
			allow(15*sec, "wait 20s", halfOpen, ""),
		)},
		{name: "a lost probe is given up after a cool-down", steps: then(openAt4s,
			allow(14*sec, "ok", halfOpen, "svc open→half-open 0/0 at 14s"),
			allow(23*sec, "wait 28s", halfOpen, ""),
			allow(24*sec, "ok", halfOpen, ""),
		)},
		{name: "late outcomes while open are ignored", steps: then(openAt4s,
			record(5*sec, ok, open, "").times(10),
			record(6*sec, fail, open, ""),
			allow(7*sec, "wait 14s", open, ""),
		)},
		{name: "late outcomes with no probe out are ignored", steps: then(openAt4s,
			allow(14*sec, "ok", halfOpen, "svc open→half-open 0/0 at 14s"),
			record(15*sec, neutral, halfOpen, ""),
			record(15*sec, fail, halfOpen, ""),
			record(15*sec, ok, halfOpen, ""),
		)},
		{name: "an unnamed outcome counts as a failure", steps: []step{
			record(0, breaker.Outcome(7), closed, "").times(4),
			record(0, breaker.Outcome(-1), open, "svc closed→open 5/5 at 0s until 10s"),
		}},
		{name: "keys are independent", steps: then(openAt4s,
			allow(5*sec, "ok", closed, "").on("other"),
			record(5*sec, fail, closed, "").on("other").times(4),
			allow(5*sec, "wait 14s", open, ""),
		)},
		{name: "a clock step back does not revive aged-out failures", steps: []step{
			record(0, fail, closed, "").times(4),
			record(40*sec, ok, closed, ""),
			record(1*sec, fail, closed, "").times(3),
			record(1*sec, fail, open, "svc closed→open 4/5 at 1s until 11s"),
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := breaker.New(tt.cfg)
			for i, st := range tt.steps {
				key := st.key
				if key == "" {
					key = "svc"
				}
				now := t0.Add(st.at)
				for range max(st.n, 1) {
					var got, tr string
					if st.allow {
						allowed, retryAt, t := s.Allow(key, now)
						got, tr = "ok", describe(t)
						if !allowed {
							got = fmt.Sprintf("wait %v", retryAt.Sub(t0))
						} else if !retryAt.IsZero() {
							got = fmt.Sprintf("ok, retryAt %v", retryAt)
						}
					} else {
						tr = describe(s.Record(key, st.o, now))
					}
					if got != st.want {
						t.Errorf("step %d: Allow(%q) at %v = %s, want %s", i, key, st.at, got, st.want)
					}
					if tr != st.tr {
						t.Errorf("step %d: transition %q, want %q", i, tr, st.tr)
					}
					if state, _ := s.State(key, now); state != st.state {
						t.Errorf("step %d: State(%q) at %v = %v, want %v", i, key, st.at, state, st.state)
					}
				}
			}
		})
	}
}

func TestStateAndSnapshot(t *testing.T) {
	s := breaker.New(breaker.Config{})
	trip := func(key string, at time.Duration, failures, successes int) {
		for range successes {
			s.Record(key, breaker.Success, t0.Add(at))
		}
		for range failures {
			s.Record(key, breaker.Failure, t0.Add(at))
		}
	}
	trip("b", 0, 5, 0)       // open until 10s
	trip("a", -8*sec, 4, 3)  // open until 2s, so half-open at 5s
	trip("c", 0, 1, 0)       // closed
	trip("d", -60*sec, 5, 0) // open until -50s, then probed back to closed
	s.Allow("d", t0.Add(-50*sec))
	s.Record("d", breaker.Success, t0.Add(-50*sec))

	now := t0.Add(5 * sec)
	tests := []struct {
		key       string
		wantState breaker.State
		wantUntil time.Time
	}{
		{key: "a", wantState: breaker.HalfOpen},
		{key: "b", wantState: breaker.Open, wantUntil: t0.Add(10 * sec)},
		{key: "c", wantState: breaker.Closed},
		{key: "d", wantState: breaker.Closed},
		{key: "unknown", wantState: breaker.Closed},
	}
	for _, tt := range tests {
		state, until := s.State(tt.key, now)
		if state != tt.wantState || !until.Equal(tt.wantUntil) {
			t.Errorf("State(%q) = %v, %v; want %v, %v", tt.key, state, until, tt.wantState, tt.wantUntil)
		}
	}

	got := s.Snapshot(now)
	want := []breaker.Status{
		{Key: "a", State: breaker.HalfOpen, Requests: 6, Failures: 3},
		{Key: "b", State: breaker.Open, Until: t0.Add(10 * sec), Requests: 5, Failures: 5},
	}
	if len(got) != len(want) {
		t.Fatalf("Snapshot = %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i].Key != want[i].Key || got[i].State != want[i].State || !got[i].Until.Equal(want[i].Until) ||
			got[i].Requests != want[i].Requests || got[i].Failures != want[i].Failures {
			t.Errorf("Snapshot[%d] = %+v, want %+v", i, got[i], want[i])
		}
	}
}

func TestStateString(t *testing.T) {
	tests := []struct {
		s    fmt.Stringer
		want string
	}{
		{breaker.Closed, "closed"},
		{breaker.Open, "open"},
		{breaker.HalfOpen, "half-open"},
		{breaker.State(9), "State(9)"},
		{breaker.Success, "success"},
		{breaker.Failure, "failure"},
		{breaker.Neutral, "neutral"},
		{breaker.Outcome(9), "Outcome(9)"},
	}
	for _, tt := range tests {
		if got := tt.s.String(); got != tt.want {
			t.Errorf("String() = %q, want %q", got, tt.want)
		}
	}
}

// TestConcurrentUse runs many callers against a few keys, for the race
// detector, and checks every transition is one the state machine allows.
func TestConcurrentUse(t *testing.T) {
	s := breaker.New(breaker.Config{Window: sec, CoolDown: 50 * time.Millisecond, HalfOpenProbes: 2})
	keys := []string{"pay", "mail", "kv", "search"}
	legal := map[[2]breaker.State]bool{
		{breaker.Closed, breaker.Open}:     true,
		{breaker.Open, breaker.HalfOpen}:   true,
		{breaker.HalfOpen, breaker.Closed}: true,
		{breaker.HalfOpen, breaker.Open}:   true,
	}
	var (
		clock       atomic.Int64 // nanoseconds since t0, advanced by every call
		mu          sync.Mutex
		transitions = map[breaker.State]int{}
		wg          sync.WaitGroup
	)
	check := func(tr *breaker.Transition) {
		if tr == nil {
			return
		}
		if !legal[[2]breaker.State{tr.From, tr.To}] {
			t.Errorf("illegal transition %+v", tr)
		}
		mu.Lock()
		transitions[tr.To]++
		mu.Unlock()
	}
	for g := range 32 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(g), 1))
			for range 2000 {
				key := keys[rng.IntN(len(keys))]
				ok, _, tr := s.Allow(key, t0.Add(time.Duration(clock.Add(int64(time.Millisecond)))))
				check(tr)
				if !ok {
					continue
				}
				o := breaker.Outcome(rng.IntN(3))
				check(s.Record(key, o, t0.Add(time.Duration(clock.Add(int64(time.Millisecond))))))
				if rng.IntN(10) == 0 {
					s.Snapshot(t0.Add(time.Duration(clock.Load())))
					s.State(key, t0.Add(time.Duration(clock.Load())))
				}
			}
		})
	}
	wg.Wait()
	// With a failure rate near one half, every key should have cycled.
	for _, st := range []breaker.State{breaker.Open, breaker.HalfOpen, breaker.Closed} {
		if transitions[st] == 0 {
			t.Errorf("no transition to %v in %v", st, transitions)
		}
	}
}
