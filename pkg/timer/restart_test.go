package timer_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/steward-run/steward/pkg/embedded"
	"github.com/steward-run/steward/pkg/timer"
)

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
	at := time.Now().Add(1500 * time.Millisecond)
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

	time.Sleep(time.Until(at) + time.Second) // due while nothing runs

	// Second life, on the same store.
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
	run(t, tm, "worker", []string{"k"}, rec.handle)
	d := rec.next(t, 5*time.Second)
	if d.ID != "durable" || string(d.Payload) != "still here" {
		t.Errorf("fired %+v", d.Fired)
	}
	rec.none(t, 1500*time.Millisecond)
}
