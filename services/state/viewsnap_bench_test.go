package state_test

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/steward-run/steward/pkg/event"
	"github.com/steward-run/steward/pkg/eventlog"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/stewardtest"
	"github.com/steward-run/steward/services/state"
)

// generatedHistory is a task's history as the generator writes it, about
// ten events: created, started, one action from proposal to outcome, some
// spend, then accepted by its checks (8 in 10), cancelled (1 in 10) or
// still running its action (1 in 10).
func generatedHistory(i int) []event.Payload {
	k := contract(i)
	k.AcceptanceCriteria = []*stewardv1.AcceptanceCriterion{{Id: "c", Expression: "true"}}
	h := append([]event.Payload{&stewardv1.TaskCreated{Contract: k}, &stewardv1.TaskStarted{}}, act("a1", "lookup", "crm", "r1")...)
	switch i % 10 {
	case 0:
		return h
	case 1:
		return append(h, succeededOutcome("a1", 1), &stewardv1.TaskCancelled{Reason: "changed plans"})
	}
	return append(h, succeededOutcome("a1", 1), &stewardv1.BudgetConsumed{Tokens: 120, CostMicros: 900},
		&stewardv1.TaskProduced{Round: 1, Checks: []*stewardv1.CriterionResult{{CriterionId: "c", Passed: true}}})
}

// longEnded is generatedHistory with the task ended: the running one
// in ten cancelled instead. A log of years is mostly tasks long ended.
func longEnded(i int) []event.Payload {
	h := generatedHistory(i)
	if i%10 == 0 {
		h = append(h, succeededOutcome("a1", 1), &stewardv1.TaskCancelled{Reason: "changed plans"})
	}
	return h
}

// recentEvents is how much of a generated log is recent history, where
// one task in ten is still running; what comes before has ended.
const recentEvents = 10_000

// generate appends about n events of generated task histories to log,
// straight through the appender (each task's events in order, many tasks
// at once), and returns how many it appended.
func generate(tb testing.TB, log *eventlog.Log, from, n int) int {
	return generateWith(tb, log, "g", from, n, generatedHistory)
}

// generateWith is generate with history's histories, of tasks named
// prefix and their number.
func generateWith(tb testing.TB, log *eventlog.Log, prefix string, from, n int, history func(int) []event.Payload) int {
	tb.Helper()
	var tasks [][]event.Payload
	total := 0
	for i := from; total < n; i++ {
		h := history(i)
		tasks = append(tasks, h)
		total += len(h)
	}
	const writers = 32
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		wg.Go(func() {
			for i := w; i < len(tasks); i += writers {
				id, head := fmt.Sprint(prefix, from+i), eventlog.Head{}
				for _, p := range tasks[i] {
					rec, err := log.Append(context.Background(), head, stewardtest.Event(tb, id, p))
					if err != nil {
						errs <- err
						return
					}
					head = eventlog.HeadOf(&stewardv1.Task{LastSequence: rec.Sequence, LastHash: rec.Event.Hash})
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		tb.Fatal(err)
	}
	return total
}

// startUp returns how long a state plane over env's log takes to start
// (from the views' snapshots when views is set, else from the start), and
// until its list holds every task (a snapshot's stubs are loaded while
// it serves).
func startUp(tb testing.TB, env *stewardtest.Env, views *state.ViewStore) (served, whole time.Duration) {
	tb.Helper()
	start := time.Now()
	p := state.New(env.Log, slog.New(slog.DiscardHandler), state.Config{Views: views})
	if err := p.Start(context.Background()); err != nil {
		tb.Fatal(err)
	}
	served = time.Since(start)
	p.Views().Len("") // waits for the stubs
	whole = time.Since(start)
	if views != nil && p.SnapshotCovered() == 0 {
		tb.Fatal("the plane did not start from a snapshot")
	}
	if p.Views().Rejected() != 0 {
		tb.Fatalf("%d generated events refused", p.Views().Rejected())
	}
	p.Stop()
	return served, whole
}

// startUpLog is a log of about events events with a snapshot of its views
// written before its last tail events, for start-ups to be timed over.
type startUpLog struct {
	env           *stewardtest.Env
	views         *state.ViewStore
	events        int
	snapshotWrite time.Duration
	snapshotBytes uint64 // the first part's, and the stubs part's
	stubBytes     uint64
}

func newStartUpLog(tb testing.TB, n, tail int) startUpLog {
	tb.Helper()
	env := stewardtest.NewEnv(tb)
	views := openViews(tb, env)
	older := max(0, n-tail-recentEvents)
	generateWith(tb, env.Log, "e", 0, older, longEnded)
	generate(tb, env.Log, 0, n-tail-older)
	p := state.New(env.Log, slog.New(slog.DiscardHandler), state.Config{Views: views})
	if err := p.Start(context.Background()); err != nil {
		tb.Fatal(err)
	}
	// As if the history were older than --evict-after: the ended tasks
	// are in the snapshot's stubs part, which the plane loads while it
	// serves, and the start is flat in the history.
	p.Views().Evict(time.Now().Add(time.Hour))
	written := time.Now()
	if _, err := p.SaveSnapshot(context.Background()); err != nil {
		tb.Fatal(err)
	}
	m, err := views.Newest(context.Background())
	if err != nil {
		tb.Fatal(err)
	}
	l := startUpLog{env: env, views: views, snapshotWrite: time.Since(written), snapshotBytes: m.Size, stubBytes: m.StubSize}
	p.Stop()
	l.events = n - tail + generate(tb, env.Log, n, tail)
	return l
}

// start times one start-up over l, from its snapshot or from the start,
// after a collection so that the last start's garbage is not timed.
func (l startUpLog) start(tb testing.TB, fromSnapshot bool) time.Duration {
	served, _ := l.startWhole(tb, fromSnapshot)
	return served
}

// startWhole is start, with how long until the list holds every task.
func (l startUpLog) startWhole(tb testing.TB, fromSnapshot bool) (served, whole time.Duration) {
	tb.Helper()
	runtime.GC()
	if fromSnapshot {
		return startUp(tb, l.env, l.views)
	}
	return startUp(tb, l.env, nil)
}

// median returns the median of xs, sorting them.
func median[T cmp.Ordered](xs []T) T {
	slices.Sort(xs)
	return xs[len(xs)/2]
}

// TestStartUpFromASnapshotIsFlat: a state plane over 100,000 events (or
// STEWARD_STARTUP_EVENTS) starts from its snapshot (written 1,000 events
// before the end) in at most twice what one over 10,000 events takes from
// the start, and at 1,000,000 events in at most 2 s. Machines are noisy, so the two are timed back to back, in
// turn first, startUpPairs times, and the median of the pairs' ratios is
// held to the bound: a burst of load on the machine falls on both starts
// of a pair, or on one pair of several. docs/performance.md records the
// 1,000,000-event run:
//
//	STEWARD_STARTUP_EVENTS=1000000 go test -count=1 -timeout 30m -run TestStartUpFromASnapshotIsFlat -v ./services/state/
func TestStartUpFromASnapshotIsFlat(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 110,000 events")
	}
	if raceDetector {
		t.Skip("a timing under the race detector times the detector: scripts/test runs this test without it")
	}
	n := 100_000
	if s := os.Getenv("STEWARD_STARTUP_EVENTS"); s != "" {
		var err error
		if n, err = strconv.Atoi(s); err != nil {
			t.Fatal(err)
		}
	}
	small, large := newStartUpLog(t, 10_000, 1_000), newStartUpLog(t, n, 1_000)
	const startUpPairs = 5
	var ratios []float64
	var smallFromStart, largeFromSnapshot []time.Duration
	for i := range startUpPairs {
		var s, l time.Duration
		if i%2 == 0 {
			s, l = small.start(t, false), large.start(t, true)
		} else {
			l, s = large.start(t, true), small.start(t, false)
		}
		smallFromStart, largeFromSnapshot = append(smallFromStart, s), append(largeFromSnapshot, l)
		ratios = append(ratios, float64(l)/float64(s))
	}
	// For the record (docs/performance.md), not the bound.
	smallFromSnapshot, largeFromStart := []time.Duration{small.start(t, true)}, []time.Duration{large.start(t, false)}
	served, whole := large.startWhole(t, true)
	t.Logf("%d events from the snapshot: served in %v, every task listed in %v", large.events, served.Round(time.Millisecond), whole.Round(time.Millisecond))
	for _, lg := range []struct {
		l                       startUpLog
		fromStart, fromSnapshot []time.Duration
	}{{small, smallFromStart, smallFromSnapshot}, {large, largeFromStart, largeFromSnapshot}} {
		t.Logf("%d events: from the start %v (median of %d), from the snapshot %v (median of %d); snapshot %d bytes and %d of stubs, written in %v",
			lg.l.events, median(lg.fromStart).Round(time.Millisecond), len(lg.fromStart), median(lg.fromSnapshot).Round(time.Millisecond),
			len(lg.fromSnapshot), lg.l.snapshotBytes, lg.l.stubBytes, lg.l.snapshotWrite.Round(time.Millisecond))
	}
	if m := median(largeFromSnapshot); n >= 1_000_000 && m > 2*time.Second {
		t.Errorf("%d events start from a snapshot in %v (median of %d); want at most 2 s", large.events, m, startUpPairs)
	}
	if r := median(ratios); r > 2 {
		t.Errorf("%d events start from a snapshot in %.2f times what 10,000 take from the start (median of %d pairs: %.2f); want at most 2",
			large.events, r, startUpPairs, ratios)
	}
}
