package eventlog_test

import (
	"context"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/steward-run/steward/pkg/embedded"
	"github.com/steward-run/steward/pkg/event"
	"github.com/steward-run/steward/pkg/eventlog"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// Append a task's first two events, each conditional on the head before
// it, then read them back with the hash chain checked.
func Example() {
	dir, cleanup := tempDir()
	defer cleanup()
	srv, err := embedded.Start(embedded.Config{StoreDir: dir})
	if err != nil {
		panic(err)
	}
	defer srv.Shutdown()
	nc, err := srv.Connect()
	if err != nil {
		panic(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	ctx := context.Background()
	log, err := eventlog.Open(ctx, js, eventlog.Config{})
	if err != nil {
		panic(err)
	}

	head := eventlog.Head{} // before the task's first event
	for _, p := range []event.Payload{&stewardv1.TaskCreated{}, &stewardv1.TaskStarted{}} {
		ev, _ := event.New(event.Meta{TaskID: "t1"}, p)
		rec, err := log.Append(ctx, head, ev)
		if err != nil {
			panic(err) // eventlog.ErrConflict: re-read, re-fold, retry
		}
		head = eventlog.Head{Sequence: rec.Sequence, Hash: rec.Event.Hash}
	}

	recs, err := log.Read(ctx, "t1")
	if err != nil {
		panic(err)
	}
	for _, r := range recs {
		fmt.Println(r.Sequence, r.Event.Type)
	}
	// Output:
	// 1 task.created
	// 2 task.started
}
