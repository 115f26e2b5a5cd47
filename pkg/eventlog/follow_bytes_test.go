package eventlog_test

import (
	"bytes"
	"context"
	"testing"

	"github.com/steward-run/steward/pkg/event"
	"github.com/steward-run/steward/pkg/eventlog"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/stewardtest"
)

// TestFollowBuffersBoundedBytes: a follower held up on its first event
// is sent a few MiB of what follows, not every large event on the log —
// what a restart's reader, folding every plan from the start, holds.
func TestFollowBuffersBoundedBytes(t *testing.T) {
	l, bus := stewardtest.OpenLog(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	const events, size = 60, 256 << 10 // 15 MiB
	for i := range events {
		intent := string(bytes.Repeat([]byte{'a' + byte(i%26)}, size))
		if _, err := l.Append(ctx, eventlog.Head{}, mustEvent(t, event.Meta{TaskID: "big" + string(rune('a'+i%26)) + string(rune('a'+i/26))}, &stewardv1.TaskCreated{Contract: &stewardv1.TaskContract{Intent: intent}})); err != nil {
			t.Fatal(err)
		}
	}
	first, release := make(chan struct{}), make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- l.Follow(ctx, "", 0, func(*stewardv1.EventRecord) error {
			select {
			case first <- struct{}{}:
				<-release
			default:
			}
			return nil
		}, nil)
	}()
	<-first
	stream, err := bus.JS.Stream(ctx, l.Config().Stream)
	if err != nil {
		t.Fatal(err)
	}
	names := stream.ConsumerNames(ctx)
	var delivered uint64
	for name := range names.Name() {
		c, err := stream.Consumer(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		delivered = max(delivered, c.CachedInfo().Delivered.Consumer)
		if info, err := c.Info(ctx); err == nil {
			delivered = max(delivered, info.Delivered.Consumer)
		}
	}
	close(release)
	if delivered*size > 12<<20 {
		t.Fatalf("%d events (%d MiB) sent to a follower that has handled one", delivered, delivered*size>>20)
	}
	cancel()
	<-done
}
