package e2e_test

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"connectrpc.com/connect"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/gen/steward/v1/stewardv1connect"
)

// What the crash matrix watches and counts across runs.

// eventWatch keeps every event of a task that the binary shows, until the
// binary dies: the events a client saw before the crash.
type eventWatch struct {
	cancel context.CancelFunc
	done   chan struct{}
	ready  chan struct{} // closed once the history up to the watch's start is in
	mu     sync.Mutex
	seen   []*stewardv1.EventRecord
	// streams counts the watches opened: more than one, and it resumed.
	streams atomic.Int32
}

// watchEvents watches taskID and returns once it has the task's history
// so far.
func watchEvents(t *testing.T, url, taskID string) *eventWatch {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	w := &eventWatch{cancel: cancel, done: make(chan struct{}), ready: make(chan struct{})}
	// No client timeout: a watch lasts as long as the binary does.
	query := stewardv1connect.NewQueryServiceClient(&http.Client{}, url)
	go func() {
		defer close(w.done)
		var once sync.Once
		for ctx.Err() == nil {
			w.follow(ctx, query, taskID, func() { once.Do(func() { close(w.ready) }) })
			time.Sleep(20 * time.Millisecond)
		}
	}()
	select {
	case <-w.ready:
	case <-time.After(10 * time.Second):
		w.close()
		t.Fatalf("WatchTask %s did not catch up within 10s", taskID)
	}
	return w
}

// follow watches from the last event seen until the stream ends, and calls
// caughtUp once it has every event up to where the task stood when the
// watch began.
func (w *eventWatch) follow(ctx context.Context, query stewardv1connect.QueryServiceClient, taskID string, caughtUp func()) {
	w.mu.Lock()
	after := lastSequence(w.seen)
	w.mu.Unlock()
	stream, err := query.WatchTask(ctx, connect.NewRequest(&stewardv1.WatchTaskRequest{TaskId: taskID, AfterSequence: after}))
	if err != nil {
		return
	}
	w.streams.Add(1)
	defer stream.Close()
	var head uint64
	for stream.Receive() {
		msg := stream.Msg()
		if msg.Record == nil {
			head = msg.LastSequence
		} else {
			w.mu.Lock()
			w.seen = append(w.seen, msg.Record)
			w.mu.Unlock()
		}
		if last := max(after, lastSequence(w.snapshot())); head > 0 && last >= head {
			caughtUp()
		}
	}
}

func (w *eventWatch) snapshot() []*stewardv1.EventRecord {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.seen
}

// close stops watching and returns what was seen.
func (w *eventWatch) close() []*stewardv1.EventRecord {
	w.cancel()
	<-w.done
	return w.snapshot()
}

// crashStats collects the matrix's numbers across runs.
var crashStats = &crashCollector{points: map[string]bool{}}

type crashCollector struct {
	mu               sync.Mutex
	points           map[string]bool
	runs, failed     int
	duplicates, lost int
	recoveries       []time.Duration
	// order and byPoint are each scenario's runs, for its own figures.
	order   []string
	byPoint map[string]*pointStats
}

// pointStats is what the runs of one scenario measured.
type pointStats struct {
	runs, failed, duplicates, lost int
	recoveries                     []time.Duration
}

func (s *crashCollector) reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.points = map[string]bool{}
	s.runs, s.failed, s.duplicates, s.lost = 0, 0, 0, 0
	s.recoveries = nil
	s.order, s.byPoint = nil, map[string]*pointStats{}
}

func (s *crashCollector) add(point string, res crashResult, failed bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.points[point] = true
	s.runs++
	if failed {
		s.failed++
	}
	s.duplicates += res.duplicates
	s.lost += res.lost
	if res.recovery > 0 {
		s.recoveries = append(s.recoveries, res.recovery)
	}
	if s.byPoint == nil {
		s.byPoint = map[string]*pointStats{}
	}
	ps := s.byPoint[point]
	if ps == nil {
		ps = &pointStats{}
		s.byPoint[point] = ps
		s.order = append(s.order, point)
	}
	ps.runs++
	if failed {
		ps.failed++
	}
	ps.duplicates += res.duplicates
	ps.lost += res.lost
	if res.recovery > 0 {
		ps.recoveries = append(ps.recoveries, res.recovery)
	}
}

// pointSummaries is one line per scenario, in the order they ran.
func (s *crashCollector) pointSummaries() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var lines []string
	for _, point := range s.order {
		ps := s.byPoint[point]
		p50, maxd := percentiles(ps.recoveries)
		lines = append(lines, fmt.Sprintf("crash matrix: point=%s runs=%d failed=%d duplicates=%d lost=%d recovery_p50=%dms recovery_max=%dms",
			point, ps.runs, ps.failed, ps.duplicates, ps.lost, p50.Milliseconds(), maxd.Milliseconds()))
	}
	return lines
}

// percentiles returns the median (the lower one of an even count) and the
// maximum of d.
func percentiles(d []time.Duration) (p50, maxd time.Duration) {
	r := slices.Clone(d)
	slices.Sort(r)
	if len(r) > 0 {
		p50, maxd = r[(len(r)-1)/2], r[len(r)-1]
	}
	return p50, maxd
}

// summary is the one line a crash-matrix run reports.
func (s *crashCollector) summary() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	p50, maxd := percentiles(s.recoveries)
	return fmt.Sprintf("crash matrix: points=%d runs=%d failed=%d duplicates=%d lost=%d recovery_p50=%dms recovery_max=%dms",
		len(s.points), s.runs, s.failed, s.duplicates, s.lost, p50.Milliseconds(), maxd.Milliseconds())
}
