package timer_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/steward-run/steward/pkg/embedded"
	"github.com/steward-run/steward/pkg/stewardtest"
	"github.com/steward-run/steward/pkg/timer"
)

// TestSurvivesRestart sets a timer, stops its consumer and the server
// before it is due, lets it come due while the server is down, and starts
// the server again: the overdue timer fires while no consumer runs, and the
// consumer, started again, has it once.
func TestSurvivesRestart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ctx := context.Background()

	// First life: start the consumer and set a timer, then stop
	// everything before it is due.
	srv, err := embedded.Start(embedded.Config{StoreDir: dir, Port: -1})
	if err != nil {
		t.Fatal(err)
	}
	nc, err := srv.Connect()
	if err != nil {
		t.Fatal(err)
	}
	js, _ := jetstream.New(nc)
	tm, err := timer.Open(ctx, js, timer.Config{})
	if err != nil {
		t.Fatal(err)
	}
	rec := newRecorder()
	sub, err := tm.Run(ctx, "worker", []string{"k"}, rec.handle)
	if err != nil {
		t.Fatal(err)
	}
	at := time.Now().Add(time.Second)
	if err := tm.Set(ctx, "k", "durable", at, []byte("still here")); err != nil {
		t.Fatal(err)
	}
	sub.Stop()
	nc.Close()
	srv.Shutdown()
	select {
	case d := <-rec.ch:
		t.Fatalf("fired before the restart: %+v", d.Fired)
	default:
	}

	// The timer comes due while the server is down, so the server must
	// fire an overdue schedule when it starts again. Schedules fire on
	// whole seconds; the server keeps wall-clock time, which no clock can
	// be injected into, so this waits on that clock passing the second.
	due := at.Truncate(time.Second).Add(time.Second)
	stewardtest.Eventually(t, 5*time.Second, func() (bool, string) {
		return time.Now().After(due), fmt.Sprintf("the timer is due at %s", due.Format(time.RFC3339Nano))
	})

	// Second life, on the same store, after the timer came due.
	srv, err = embedded.Start(embedded.Config{StoreDir: dir, Port: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown)
	nc, err = srv.Connect()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, _ = jetstream.New(nc)
	tm, err = timer.Open(ctx, js, timer.Config{})
	if err != nil {
		t.Fatal(err)
	}
	bus := &stewardtest.Bus{Server: srv, Conn: nc, JS: js}
	stewardtest.Eventually(t, 10*time.Second, func() (bool, string) {
		fired := onStream(t, bus, "fired")
		return len(fired) == 1, fmt.Sprintf("fired timers: %v", fired)
	})
	run(t, tm, "worker", []string{"k"}, rec.handle)
	d := rec.next(t, 5*time.Second)
	if d.ID != "durable" || string(d.Payload) != "still here" {
		t.Errorf("fired %+v", d.Fired)
	}
	settled(t, bus, "worker")
	rec.none(t)
}
