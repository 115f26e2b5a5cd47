package timer_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/steward-run/steward/pkg/errs"
	"github.com/steward-run/steward/pkg/stewardtest"
	"github.com/steward-run/steward/pkg/timer"
)

// delivery is one call of a handler.
type delivery struct {
	timer.Fired
	when time.Time
}

// recorder is a handler that records every call on a channel.
type recorder struct {
	ch chan delivery
}

func newRecorder() *recorder { return &recorder{ch: make(chan delivery, 100)} }

func (r *recorder) handle(_ context.Context, f timer.Fired) error {
	r.ch <- delivery{Fired: f, when: time.Now()}
	return nil
}

// next waits for one delivery.
func (r *recorder) next(t *testing.T, within time.Duration) delivery {
	t.Helper()
	select {
	case d := <-r.ch:
		return d
	case <-time.After(within):
		t.Fatalf("no timer fired within %s", within)
		return delivery{}
	}
}

// none checks that nothing more was delivered. Call it once the timers
// have settled (see settled), when nothing more can come.
func (r *recorder) none(t *testing.T) {
	t.Helper()
	select {
	case d := <-r.ch:
		t.Fatalf("unexpected delivery %s/%s", d.Kind, d.ID)
	default:
	}
}

// kStream is the stream of the timers of owner k, which the tests use.
var kStream = timer.Stream(timer.DefaultStream, "k")

// settled waits until no timer is left to fire on kStream and each of consumers has acknowledged every fired timer it
// takes: whatever these timers were going to deliver, they have.
func settled(t *testing.T, bus *stewardtest.Bus, consumers ...string) {
	t.Helper()
	stewardtest.Eventually(t, 10*time.Second, func() (bool, string) {
		at := onStream(t, bus, "at")
		return len(at) == 0, fmt.Sprintf("schedules pending: %v", at)
	})
	for _, c := range consumers {
		bus.Settle(t, kStream, c)
	}
}

// onStream returns the subjects under stage ("at" for schedules, "fired"
// for fired timers) on kStream, with their message
// counts.
func onStream(t *testing.T, bus *stewardtest.Bus, stage string) map[string]uint64 {
	t.Helper()
	ctx := context.Background()
	s, err := bus.JS.Stream(ctx, kStream)
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(ctx, jetstream.WithSubjectFilter(timer.DefaultPrefix+".k."+stage+".>"))
	if err != nil {
		t.Fatal(err)
	}
	return info.State.Subjects
}

// undelivered waits until consumer has pending fired timers not yet
// delivered, and checks that it has ackPending delivered and not yet
// acknowledged.
func undelivered(t *testing.T, bus *stewardtest.Bus, consumer string, pending uint64, ackPending int) {
	t.Helper()
	ctx := context.Background()
	var ci *jetstream.ConsumerInfo
	stewardtest.Eventually(t, 10*time.Second, func() (bool, string) {
		c, err := bus.JS.Consumer(ctx, kStream, consumer)
		if err != nil {
			t.Fatal(err)
		}
		if ci, err = c.Info(ctx); err != nil {
			t.Fatal(err)
		}
		return ci.NumPending == pending, fmt.Sprintf("%s has %d timers undelivered, want %d", consumer, ci.NumPending, pending)
	})
	if ci.NumAckPending != ackPending {
		t.Errorf("%s has %d timers in hand, want %d", consumer, ci.NumAckPending, ackPending)
	}
}

func open(t *testing.T) (*timer.Timers, *stewardtest.Bus) {
	t.Helper()
	bus := stewardtest.StartBus(t)
	tm, err := timer.Open(context.Background(), bus.JS, timer.Config{})
	if err != nil {
		t.Fatal(err)
	}
	return tm, bus
}

func run(t *testing.T, tm *timer.Timers, consumer string, kinds []string, fn timer.Handler) {
	t.Helper()
	sub, err := tm.Run(context.Background(), consumer, kinds, fn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sub.Stop)
}

func TestFiresOnceAtItsTime(t *testing.T) {
	t.Parallel()
	tm, bus := open(t)
	rec := newRecorder()
	run(t, tm, "worker", []string{"k.retry"}, rec.handle)

	// Not on a whole second, so rounding down would fire it early.
	at := time.Now().Add(1500 * time.Millisecond)
	if err := tm.Set(context.Background(), "k.retry", "act-1/2", at, []byte("hello")); err != nil {
		t.Fatal(err)
	}
	d := rec.next(t, 5*time.Second)
	if d.when.Before(at) {
		t.Errorf("fired at %s, %s before its time", d.when, at.Sub(d.when))
	}
	if d.Kind != "k.retry" || d.ID != "act-1/2" || string(d.Payload) != "hello" || !d.At.Equal(at) {
		t.Errorf("fired %+v, want kind k.retry, id act-1/2, at %s, payload hello", d.Fired, at)
	}
	settled(t, bus, "worker")
	rec.none(t)
}

func TestPastTimeFiresSoon(t *testing.T) {
	t.Parallel()
	tm, _ := open(t)
	rec := newRecorder()
	run(t, tm, "worker", []string{"k"}, rec.handle)
	start := time.Now()
	if err := tm.Set(context.Background(), "k", "late", start.Add(-time.Hour), nil); err != nil {
		t.Fatal(err)
	}
	d := rec.next(t, 3*time.Second)
	if d.ID != "late" || len(d.Payload) != 0 {
		t.Errorf("fired %+v", d.Fired)
	}
	t.Logf("a past timer fired after %s", d.when.Sub(start))
}

func TestSetTwiceFiresOnce(t *testing.T) {
	t.Parallel()
	tm, bus := open(t)
	rec := newRecorder()
	run(t, tm, "worker", []string{"k"}, rec.handle)
	ctx := context.Background()

	at := time.Now().Add(time.Second)
	if err := tm.Set(ctx, "k", "same", at, []byte("first")); err != nil {
		t.Fatal(err)
	}
	// A retry, and a second process doing the same work a little later
	// with a different time and payload: the first Set wins.
	if err := tm.Set(ctx, "k", "same", at, []byte("first")); err != nil {
		t.Fatal(err)
	}
	if err := tm.Set(ctx, "k", "same", at.Add(time.Second), []byte("second")); err != nil {
		t.Fatal(err)
	}
	d := rec.next(t, 5*time.Second)
	if string(d.Payload) != "first" || !d.At.Equal(at) {
		t.Errorf("fired %+v, want the first Set's", d.Fired)
	}
	// Setting it again after it fired does not fire it again.
	if err := tm.Set(ctx, "k", "same", time.Now(), []byte("third")); err != nil {
		t.Fatal(err)
	}
	settled(t, bus, "worker")
	rec.none(t)
}

func TestConcurrentSetsFireOnce(t *testing.T) {
	t.Parallel()
	tm, bus := open(t)
	rec := newRecorder()
	run(t, tm, "worker", []string{"k"}, rec.handle)
	at := time.Now().Add(time.Second)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			if err := tm.Set(context.Background(), "k", "race", at, fmt.Appendf(nil, "%d", i)); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	rec.next(t, 5*time.Second)
	settled(t, bus, "worker")
	rec.none(t)
}

func TestDistinctIDsFireSeparately(t *testing.T) {
	t.Parallel()
	tm, bus := open(t)
	rec := newRecorder()
	run(t, tm, "worker", []string{"k"}, rec.handle)
	at := time.Now()
	// Ids that would collide if they were cut or escaped into a subject.
	ids := []string{"a.b", "a_b", "a b", "a*b", "ä/b", "a>b"}
	for _, id := range ids {
		if err := tm.Set(context.Background(), "k", id, at, []byte(id)); err != nil {
			t.Fatal(err)
		}
	}
	got := map[string]bool{}
	for range ids {
		d := rec.next(t, 3*time.Second)
		if string(d.Payload) != d.ID {
			t.Errorf("timer %q carries payload %q", d.ID, d.Payload)
		}
		got[d.ID] = true
	}
	if len(got) != len(ids) {
		t.Errorf("fired %v, want each of %q once", got, ids)
	}
	settled(t, bus, "worker")
	rec.none(t)
}

// Timers due in the same second all fire promptly. nats.go's Messages
// iterator could lose a pull when several came together and leave the
// rest 30s late; see subscription.loop.
func TestTimersDueTogetherAllFirePromptly(t *testing.T) {
	t.Parallel()
	tm, _ := open(t)
	rec := newRecorder()
	run(t, tm, "worker", []string{"k"}, rec.handle)
	at := time.Now().Add(time.Second)
	const n = 5
	for i := range n {
		if err := tm.Set(context.Background(), "k", fmt.Sprint("t", i), at, nil); err != nil {
			t.Fatal(err)
		}
	}
	got := map[string]bool{}
	for range n {
		d := rec.next(t, time.Until(at)+3*time.Second)
		if late := d.when.Sub(at); late > 3*time.Second {
			t.Errorf("timer %s fired %s late", d.ID, late)
		}
		got[d.ID] = true
	}
	if len(got) != n {
		t.Errorf("fired %v, want %d distinct timers", got, n)
	}
}

func TestHandlerErrorRedelivers(t *testing.T) {
	t.Parallel()
	tm, bus := open(t)
	var calls []time.Time
	var mu sync.Mutex
	done := make(chan struct{})
	run(t, tm, "worker", []string{"k"}, func(_ context.Context, f timer.Fired) error {
		mu.Lock()
		defer mu.Unlock()
		calls = append(calls, time.Now())
		switch len(calls) {
		case 1, 2:
			return errors.New("not yet")
		case 3:
			close(done)
		}
		return nil
	})
	if err := tm.Set(context.Background(), "k", "flaky", time.Now(), nil); err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("not redelivered")
	}
	// Once acknowledged, the timer is not delivered again.
	settled(t, bus, "worker")
	mu.Lock()
	defer mu.Unlock()
	if len(calls) != 3 {
		t.Fatalf("handler ran %d times, want 3", len(calls))
	}
	// Backoff: 100ms after the first failure, 200ms after the second.
	if gap := calls[1].Sub(calls[0]); gap < 90*time.Millisecond {
		t.Errorf("first redelivery after %s, want about 100ms", gap)
	}
	if gap := calls[2].Sub(calls[1]); gap < 190*time.Millisecond {
		t.Errorf("second redelivery after %s, want about 200ms", gap)
	}
}

func TestKindsFilter(t *testing.T) {
	t.Parallel()
	tm, bus := open(t)
	parent, child, both := newRecorder(), newRecorder(), newRecorder()
	run(t, tm, "parent", []string{"k"}, parent.handle)
	run(t, tm, "child", []string{"k.beta"}, child.handle)
	run(t, tm, "both", []string{"k.beta", "k.gamma", "k.gamma"}, both.handle)
	ctx := context.Background()
	now := time.Now()
	for _, k := range []string{"k", "k.beta", "k.gamma", "k.delta"} {
		if err := tm.Set(ctx, k, "1", now, []byte(k)); err != nil {
			t.Fatal(err)
		}
	}
	if d := parent.next(t, 3*time.Second); d.Kind != "k" {
		t.Errorf("parent got %s", d.Kind)
	}
	if d := child.next(t, 3*time.Second); d.Kind != "k.beta" {
		t.Errorf("child got %s", d.Kind)
	}
	got := map[string]bool{}
	for range 2 {
		got[both.next(t, 3*time.Second).Kind] = true
	}
	if !got["k.beta"] || !got["k.gamma"] {
		t.Errorf("both got %v, want k.beta and k.gamma", got)
	}
	settled(t, bus, "parent", "child", "both")
	parent.none(t)
	child.none(t)
	both.none(t)
}

func TestSharedConsumerDeliversEachOnce(t *testing.T) {
	t.Parallel()
	tm, bus := open(t)
	var count atomic.Int32
	seen := make(chan string, 100)
	handler := func(_ context.Context, f timer.Fired) error {
		count.Add(1)
		seen <- f.ID
		return nil
	}
	// Two processes sharing one consumer.
	run(t, tm, "shared", []string{"k"}, handler)
	run(t, tm, "shared", []string{"k"}, handler)
	const n = 10
	for i := range n {
		if err := tm.Set(context.Background(), "k", fmt.Sprint(i), time.Now(), nil); err != nil {
			t.Fatal(err)
		}
	}
	got := map[string]bool{}
	for range n {
		select {
		case id := <-seen:
			got[id] = true
		case <-time.After(5 * time.Second):
			t.Fatalf("only %d of %d timers fired", len(got), n)
		}
	}
	settled(t, bus, "shared")
	if c := count.Load(); c != n || len(got) != n {
		t.Errorf("%d deliveries of %d distinct timers, want %d of %d", c, len(got), n, n)
	}
}

func TestBadInput(t *testing.T) {
	t.Parallel()
	tm, _ := open(t)
	ctx := context.Background()
	now := time.Now()
	sets := []struct {
		name, kind, id string
		at             time.Time
	}{
		{"empty kind", "", "x", now},
		{"empty id", "k", "", now},
		{"zero time", "k", "x", time.Time{}},
		{"wildcard token", "a.*", "x", now},
		{"tail wildcard", "a.>", "x", now},
		{"wildcard inside token", "a.b*", "x", now},
		{"space in kind", "a b", "x", now},
		{"empty token", "a..b", "x", now},
		{"leading dot", ".a", "x", now},
		{"trailing dot", "a.", "x", now},
		{"newline in id", "k", "x\ny", now},
		{"id with surrounding spaces", "k", " x ", now},
		{"upper-case owner", "K.x", "x", now},
		{"owner with a slash", "a/b.x", "x", now},
		{"owner at, the shared stream's stage", "at.x", "x", now},
		{"owner fired", "fired", "x", now},
	}
	for _, tc := range sets {
		t.Run("Set/"+tc.name, func(t *testing.T) {
			err := tm.Set(ctx, tc.kind, tc.id, tc.at, nil)
			if !errs.Is(err, errs.Invalid) {
				t.Errorf("Set(%q, %q) = %v, want an invalid-input error", tc.kind, tc.id, err)
			}
		})
	}
	noop := func(context.Context, timer.Fired) error { return nil }
	runs := []struct {
		name, consumer string
		kinds          []string
		fn             timer.Handler
	}{
		{"no consumer name", "", []string{"k"}, noop},
		{"no kinds", "c", nil, noop},
		{"bad kind", "c", []string{"k.*"}, noop},
		{"no handler", "c", []string{"k"}, nil},
		{"two owners", "c", []string{"k.a", "j.a"}, noop},
	}
	for _, tc := range runs {
		t.Run("Run/"+tc.name, func(t *testing.T) {
			sub, err := tm.Run(ctx, tc.consumer, tc.kinds, tc.fn)
			if !errs.Is(err, errs.Invalid) {
				if sub != nil {
					sub.Stop()
				}
				t.Errorf("Run = %v, want an invalid-input error", err)
			}
		})
	}
}

func TestAnOwnersStreamIsKeptAsItIs(t *testing.T) {
	t.Parallel()
	bus := stewardtest.StartBus(t)
	ctx := context.Background()
	for range 2 { // a second Timers opens the stream the first made
		tm, err := timer.Open(ctx, bus.JS, timer.Config{})
		if err != nil {
			t.Fatal(err)
		}
		if err := tm.Set(ctx, "k", "x", time.Now().Add(time.Hour), nil); err != nil {
			t.Fatal(err)
		}
	}
	// A stream that cannot schedule is refused, not rewritten.
	if _, err := bus.JS.CreateStream(ctx, jetstream.StreamConfig{Name: "PLAIN_K", Subjects: []string{"plain.k.>"}}); err != nil {
		t.Fatal(err)
	}
	tm, err := timer.Open(ctx, bus.JS, timer.Config{Stream: "PLAIN", Prefix: "plain"})
	if err != nil {
		t.Fatal(err)
	}
	if err := tm.Set(ctx, "k", "x", time.Now(), nil); err == nil {
		t.Fatal("Set used a stream without message schedules")
	}
	s, err := bus.JS.Stream(ctx, "PLAIN_K")
	if err != nil {
		t.Fatal(err)
	}
	if s.CachedInfo().Config.AllowMsgSchedules {
		t.Error("Set rewrote an existing stream")
	}
}

// TestEachOwnerHasItsOwnStream: what a writer can do to a stream through
// headers — a roll-up purges all of it — reaches only its owner's timers.
func TestEachOwnerHasItsOwnStream(t *testing.T) {
	t.Parallel()
	tm, bus := open(t)
	ctx := context.Background()
	for _, kind := range []string{"k.a", "j.a"} {
		if err := tm.Set(ctx, kind, "x", time.Now().Add(time.Hour), nil); err != nil {
			t.Fatal(err)
		}
	}
	// j's writer purges its whole stream, as any writer of it could.
	msg := &nats.Msg{Subject: timer.DefaultPrefix + ".j.at.j.a.rollup", Header: nats.Header{"Nats-Rollup": []string{"all"}}}
	if _, err := bus.JS.PublishMsg(ctx, msg); err != nil {
		t.Fatal(err)
	}
	if got := onStream(t, bus, "at"); len(got) != 1 {
		t.Errorf("k's schedules after j's roll-up: %v, want its one", got)
	}
}

func TestStopOnContextEnd(t *testing.T) {
	t.Parallel()
	tm, bus := open(t)
	ctx, cancel := context.WithCancel(context.Background())
	rec := newRecorder()
	sub, err := tm.Run(ctx, "worker", []string{"k"}, rec.handle)
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	stopped := make(chan struct{})
	go func() { sub.Stop(); close(stopped) }()
	select {
	case <-stopped:
	case <-time.After(5 * time.Second):
		t.Fatal("Stop hung after the context ended")
	}
	// A witness takes the same timers: once it has the timer, the stopped
	// consumer could have had it too.
	witness := newRecorder()
	run(t, tm, "witness", []string{"k"}, witness.handle)
	if err := tm.Set(context.Background(), "k", "after", time.Now(), nil); err != nil {
		t.Fatal(err)
	}
	witness.next(t, 5*time.Second)
	rec.none(t)
	undelivered(t, bus, "worker", 1, 0)
}

func TestFiredTimerReplacesItsSchedule(t *testing.T) {
	t.Parallel()
	tm, bus := open(t)
	rec := newRecorder()
	run(t, tm, "worker", []string{"k"}, rec.handle)
	ctx := context.Background()
	if err := tm.Set(ctx, "k", "x", time.Now(), nil); err != nil {
		t.Fatal(err)
	}
	rec.next(t, 3*time.Second)
	s, err := bus.JS.Stream(ctx, kStream)
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(ctx, jetstream.WithSubjectFilter(timer.DefaultPrefix+".>"))
	if err != nil {
		t.Fatal(err)
	}
	// The schedule is gone; the fired timer stays, as the record that
	// makes a later Set a no-op, until its TTL ends it.
	if len(info.State.Subjects) != 1 {
		t.Fatalf("stream holds subjects %v, want only the fired timer", info.State.Subjects)
	}
	for subj := range info.State.Subjects {
		if !strings.HasPrefix(subj, timer.DefaultPrefix+".k.fired.") {
			t.Errorf("stream holds %s, want only the fired timer", subj)
		}
		msg, err := s.GetLastMsgForSubject(ctx, subj)
		if err != nil {
			t.Fatal(err)
		}
		if ttl := msg.Header.Get(jetstream.MsgTTLHeader); ttl != timer.FiredRetention.String() {
			t.Errorf("fired timer %s has TTL %q, want %s", subj, ttl, timer.FiredRetention)
		}
	}
}

// TestSlotsLetALongHandlerNotHoldUpTheRest: with Slots, a timer fires
// while another's handler is still running; without, it waits its turn.
func TestSlotsLetALongHandlerNotHoldUpTheRest(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		opts     []timer.RunOption
		overlaps bool
	}{{"one at a time", nil, false}, {"two slots", []timer.RunOption{timer.Slots(2)}, true}} {
		t.Run(tc.name, func(t *testing.T) {
			tm, bus := open(t)
			ctx := context.Background()
			release := make(chan struct{})
			second := make(chan struct{}, 1)
			sub, err := tm.Run(ctx, "worker", []string{"k"}, func(_ context.Context, f timer.Fired) error {
				if f.ID == "long" {
					<-release
					return nil
				}
				second <- struct{}{}
				return nil
			}, tc.opts...)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(sub.Stop)
			t.Cleanup(func() { close(release) })
			// A witness takes the same timers: once it has both, the
			// worker could have had the short one too, had it a free slot.
			witness := newRecorder()
			run(t, tm, "witness", []string{"k"}, witness.handle)
			if err := tm.Set(ctx, "k", "long", time.Now(), nil); err != nil {
				t.Fatal(err)
			}
			if err := tm.Set(ctx, "k", "short", time.Now().Add(500*time.Millisecond), nil); err != nil {
				t.Fatal(err)
			}
			witness.next(t, 5*time.Second)
			witness.next(t, 5*time.Second)
			if tc.overlaps {
				select {
				case <-second:
				case <-time.After(5 * time.Second):
					t.Error("the short timer waited behind the long handler")
				}
				return
			}
			select {
			case <-second:
				t.Error("a timer was handled while another's handler ran")
			default:
			}
			undelivered(t, bus, "worker", 1, 1)
		})
	}
}
