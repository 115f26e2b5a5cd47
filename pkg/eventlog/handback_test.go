package eventlog_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/steward-run/steward/pkg/event"
	"github.com/steward-run/steward/pkg/eventlog"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/stewardtest"
)

// TestStopHandsBackWhatItHolds: two processes share a reaction consumer,
// as two replicas of a plane do. The first holds a task's events — one in
// its reaction, the rest queued in its lane and in the fetch it holds —
// when it is stopped, as SIGTERM stops a plane: the reaction running
// finishes and is acknowledged, and everything else reaches the other
// process at once, not after ReactionAckWait. Before Stop handed them back,
// the buffered events waited out the ack wait (in 2 of 5 runs: whether the
// client still buffers some when stopped is a race, so three rounds).
func TestStopHandsBackWhatItHolds(t *testing.T) {
	for round := range 3 {
		t.Run(fmt.Sprintf("round-%d", round+1), stopHandsBack)
	}
}

// lanesQueue is how many events one lane queues (newLanes).
const lanesQueue = 64

func stopHandsBack(t *testing.T) {
	l, bus := stewardtest.OpenLog(t)
	ctx := context.Background()
	const n = 150 // more than a lane queues, so the fetch holds the rest
	head := eventlog.Head{}
	for i := range n {
		var p event.Payload = &stewardv1.BudgetReleased{Tokens: 1}
		if i == 0 {
			p = &stewardv1.TaskCreated{}
		}
		rec, err := l.Append(ctx, head, mustEvent(t, event.Meta{TaskID: "held"}, p))
		if err != nil {
			t.Fatal(err)
		}
		head = eventlog.Head{Sequence: rec.Sequence, Hash: rec.Event.Hash}
	}
	var mu sync.Mutex
	handled := map[uint64][]string{} // by sequence, the processes that handled it
	holding, release := make(chan struct{}), make(chan struct{})
	react := func(name string, hold bool) eventlog.Subscription {
		record := func(_ context.Context, rec *stewardv1.EventRecord) error {
			mu.Lock()
			handled[rec.Sequence] = append(handled[rec.Sequence], name)
			mu.Unlock()
			return nil
		}
		sub, err := l.React(ctx, "shared",
			eventlog.OnRecord[*stewardv1.TaskCreated](func(ctx context.Context, rec *stewardv1.EventRecord) error {
				if hold {
					close(holding)
					<-release
				}
				return record(ctx, rec)
			}),
			eventlog.OnRecord[*stewardv1.BudgetReleased](record))
		if err != nil {
			t.Fatal(err)
		}
		return sub
	}
	first := react("first", true)
	<-holding
	// Every event is the first process's before the second starts.
	stewardtest.Eventually(t, 10*time.Second, func() (bool, string) {
		cons, err := bus.JS.Consumer(ctx, l.Config().Stream, "shared")
		if err != nil {
			return false, err.Error()
		}
		ci, err := cons.Info(ctx)
		if err != nil {
			return false, err.Error()
		}
		// More than its lane queues: the rest wait in the fetch it holds.
		return ci.NumAckPending > lanesQueue+1, fmt.Sprintf("%d of %d delivered", ci.NumAckPending, n)
	})
	second := react("second", false)
	defer second.Stop()
	stopped := make(chan struct{})
	go func() {
		first.Stop()
		close(stopped)
	}()
	released := time.Now()
	close(release)
	stewardtest.Eventually(t, 3*eventlog.ReactionAckWait, func() (bool, string) {
		mu.Lock()
		defer mu.Unlock()
		return len(handled) == n, fmt.Sprintf("%d of %d events handled", len(handled), n)
	})
	took := time.Since(released)
	<-stopped
	mu.Lock()
	defer mu.Unlock()
	if by := handled[1]; len(by) != 1 || by[0] != "first" {
		t.Errorf("the reaction running at the stop was handled by %v; want it finished and acknowledged by the first process alone", by)
	}
	if took >= eventlog.ReactionAckWait/2 {
		t.Errorf("the events the stopped process held were all handled %s after its reaction finished; want well within the ack wait (%s)", took.Round(time.Millisecond), eventlog.ReactionAckWait)
	}
	byName := map[string]int{}
	for _, by := range handled {
		for _, b := range by {
			byName[b]++
		}
	}
	t.Logf("all %d events handled %s after the stopped process's reaction finished, by %v", n, took.Round(time.Millisecond), byName)
}
