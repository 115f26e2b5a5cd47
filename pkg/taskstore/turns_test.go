package taskstore_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/steward-run/steward/pkg/eventlog"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/stewardtest"
	"github.com/steward-run/steward/pkg/taskstore"
)

// TestProcessesTakingTurnsReadFirst: two processes (two Logs, two
// stores) write one task in turn, as two replicas of a plane may, so
// each finds its fold behind at every write. After the first write that
// finds so, each reads before it writes: one publish a write, not a
// publish refused for its head and then another. A process that writes
// alone goes back to writing on its fold without a read.
func TestProcessesTakingTurnsReadFirst(t *testing.T) {
	bus := stewardtest.StartBus(t)
	ctx := context.Background()
	var stores [2]*taskstore.Store
	for i := range stores {
		log, err := eventlog.Open(ctx, bus.JS, eventlog.Config{})
		if err != nil {
			t.Fatal(err)
		}
		stores[i] = taskstore.New(log)
	}
	const id = "turns"
	log, err := eventlog.Open(ctx, bus.JS, eventlog.Config{})
	if err != nil {
		t.Fatal(err)
	}
	stewardtest.Append(t, log, id, &stewardv1.TaskCreated{Contract: &stewardv1.TaskContract{Intent: "x"}}, &stewardv1.TaskStarted{})
	var publishes, gets atomic.Int64
	count := func(subject string, n *atomic.Int64) {
		sub, err := bus.Conn.Subscribe(subject, func(*nats.Msg) { n.Add(1) })
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = sub.Unsubscribe() })
	}
	count("steward.task."+id+".>", &publishes) // every append tried, stored or refused
	count("$JS.API.DIRECT.GET.>", &gets)
	if err := bus.Conn.Flush(); err != nil {
		t.Fatal(err)
	}
	write := func(s *taskstore.Store, n int) {
		t.Helper()
		ev := stewardtest.Event(t, id, &stewardv1.BudgetConsumed{Tokens: 1})
		ev.EventId = fmt.Sprint("spend-", n)
		if err := s.Write(ctx, id, func(*stewardv1.Task) (*stewardv1.Event, error) { return ev, nil }); err != nil {
			t.Fatal(err)
		}
	}
	settled := func() (int64, int64) {
		t.Helper()
		if err := bus.Conn.Flush(); err != nil {
			t.Fatal(err)
		}
		return publishes.Load(), gets.Load()
	}
	const turns = 20
	for n := range turns {
		write(stores[n%2], n)
	}
	// Each store's first write reads (a fold it does not have yet), and
	// its second tries the fold, loses and reads: two refused publishes.
	if p, _ := settled(); p > turns+2 {
		t.Fatalf("%d writes in turn published %d times, want at most %d", turns, p, turns+2)
	}
	// Alone, the first write reads (and finds the other's last event),
	// the second reads and finds nothing new, and the rest read nothing.
	p0, g0 := settled()
	for n := turns; n < turns+10; n++ {
		write(stores[0], n)
	}
	if p, g := settled(); p-p0 != 10 || g-g0 > 4 {
		t.Fatalf("10 writes alone published %d times and made %d direct gets, want 10 and at most 4", p-p0, g-g0)
	}
}
