package eventlog_test

import (
	"context"
	"testing"
	"time"

	"github.com/steward-run/steward/pkg/event"
	"github.com/steward-run/steward/pkg/eventlog"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/stewardtest"
)

// TestAReactionInTheWritersProcessTakesTheWrittenEvent: a reaction and a
// follower over the Log an event was appended through get the record the
// append returned, not a decoding of the stored bytes; a Log of another
// process (another Open) decodes its own.
func TestAReactionInTheWritersProcessTakesTheWrittenEvent(t *testing.T) {
	l, bus := stewardtest.OpenLog(t)
	ctx := context.Background()
	written, err := l.Append(ctx, eventlog.Head{}, mustEvent(t, event.Meta{TaskID: "shared"}, &stewardv1.TaskCreated{}))
	if err != nil {
		t.Fatal(err)
	}
	other, err := eventlog.Open(ctx, bus.JS, eventlog.Config{})
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan *stewardv1.EventRecord, 2)
	for name, log := range map[string]*eventlog.Log{"writer": l, "other": other} {
		sub, err := log.React(ctx, name, eventlog.OnRecord[*stewardv1.TaskCreated](func(_ context.Context, rec *stewardv1.EventRecord) error {
			got <- rec
			return nil
		}))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(sub.Stop)
		var rec *stewardv1.EventRecord
		select {
		case rec = <-got:
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: no delivery", name)
		}
		if rec.Sequence != written.Sequence || string(rec.Event.Hash) != string(written.Event.Hash) {
			t.Fatalf("%s: got event %d, want %d", name, rec.Sequence, written.Sequence)
		}
		if shared := rec.Event == written.Event; shared != (name == "writer") {
			t.Fatalf("%s: the reaction's event is the written one: %v", name, shared)
		}
	}
	// A read of the chain hands out the same record.
	recs, err := l.ReadAfter(ctx, "shared", 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 1 || recs[0].Event != written.Event {
		t.Fatalf("ReadAfter: %v, want the written event itself", recs)
	}
}
