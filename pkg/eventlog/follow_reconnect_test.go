package eventlog_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/steward-run/steward/pkg/event"
	"github.com/steward-run/steward/pkg/eventlog"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/stewardtest"
)

// TestAFollowerLosesNothingToAReconnect: a reader whose client reconnects
// while it is held up on an event gets every event after, though nobody
// waits on it (no stall to notice). Nothing is acknowledged, so what the
// server sent across the reconnect is not sent again. Without either
// guard — a follow ends on a reconnect, and one idle for followIdle asks
// the server what it delivered — the reader stood at 502 of 1,000 with no
// error, its client's buffer overrun by a second pull.
func TestAFollowerLosesNothingToAReconnect(t *testing.T) {
	w, bus := stewardtest.OpenLog(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	nc, err := bus.Server.Connect(nats.MaxReconnects(-1), nats.ReconnectWait(10*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	l, err := eventlog.Open(ctx, js, eventlog.Config{})
	if err != nil {
		t.Fatal(err)
	}
	appendOne := func(i int) uint64 {
		rec, err := w.Append(ctx, eventlog.Head{}, mustEvent(t, event.Meta{TaskID: fmt.Sprintf("reconnect-%d", i)}, &stewardv1.TaskCreated{}))
		if err != nil {
			t.Fatal(err)
		}
		return rec.Sequence
	}
	appendOne(0)
	r := &heldReader{release: make(chan struct{})}
	go l.KeepReading(ctx, r)
	stewardtest.Eventually(t, 10*time.Second, func() (bool, string) { return r.p.Applied() >= 1, "the first event" })
	if err := nc.ForceReconnect(); err != nil {
		t.Fatal(err)
	}
	stewardtest.Eventually(t, 10*time.Second, func() (bool, string) {
		return nc.Stats().Reconnects >= 1 && nc.IsConnected(), "a reconnect"
	})
	var last uint64
	for i := range 999 {
		last = appendOne(i + 1)
	}
	close(r.release)
	stewardtest.Eventually(t, 20*time.Second, func() (bool, string) {
		return r.p.Applied() == last, fmt.Sprintf("the reader at %d of %d", r.p.Applied(), last)
	})
}

// heldReader holds up on the second event it applies until released.
type heldReader struct {
	p       eventlog.Progress
	applied int
	release chan struct{}
}

func (r *heldReader) Apply(rec *stewardv1.EventRecord) error {
	if r.applied++; r.applied == 2 {
		<-r.release
	}
	r.p.Advance(rec.Sequence)
	return nil
}
func (r *heldReader) Skip(seq uint64, _ error)     { r.p.Advance(seq) }
func (r *heldReader) Progress() *eventlog.Progress { return &r.p }
