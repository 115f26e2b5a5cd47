package eventlog_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/steward-run/steward/pkg/errs"
	"github.com/steward-run/steward/pkg/event"
	"github.com/steward-run/steward/pkg/eventlog"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/stewardtest"
)

// TestAnEventOfANewerBuildIsLeftForIt: an event of a type this build does
// not know, on a task's chain, is no one's mistake. A reaction consumer a
// newer replica widened keeps the newer filter when this build makes it
// again, and leaves the event unacknowledged, not set aside; a read of
// the chain is unavailable, not corrupt, so a reaction needing it is
// redelivered; a follower goes past it without setting it aside.
func TestAnEventOfANewerBuildIsLeftForIt(t *testing.T) {
	l, bus := stewardtest.OpenLog(t)
	ctx := context.Background()
	created, err := l.Append(ctx, eventlog.Head{}, mustEvent(t, event.Meta{TaskID: "newer"}, &stewardv1.TaskCreated{}))
	if err != nil {
		t.Fatal(err)
	}
	newer := stewardtest.AppendNewer(t, l, bus.JS, created).Sequence

	// A newer replica made the consumer with its own type in the filter.
	filters := []string{l.TypeFilter(event.TypeTaskCreated), l.TypeFilter(stewardtest.NewerType)}
	if _, err := bus.JS.CreateOrUpdateConsumer(ctx, eventlog.DefaultStream, jetstream.ConsumerConfig{
		Durable: "mixed", FilterSubjects: filters, AckPolicy: jetstream.AckExplicitPolicy,
	}); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var handled []uint64
	sub, err := l.React(ctx, "mixed", eventlog.OnRecord[*stewardv1.TaskCreated](func(_ context.Context, rec *stewardv1.EventRecord) error {
		mu.Lock()
		defer mu.Unlock()
		handled = append(handled, rec.Sequence)
		return nil
	}))
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Stop()
	cons, err := bus.JS.Consumer(ctx, eventlog.DefaultStream, "mixed")
	if err != nil {
		t.Fatal(err)
	}
	if got := cons.CachedInfo().Config.FilterSubjects; !slices.Contains(got, filters[1]) {
		t.Fatalf("this build narrowed the consumer to %v: the newer type's events would pass it by", got)
	}
	// Delivered more than once and never acknowledged: left for a newer
	// replica.
	stewardtest.Eventually(t, 20*time.Second, func() (bool, string) {
		info, err := cons.Info(ctx)
		if err != nil {
			return false, err.Error()
		}
		return info.NumRedelivered > 0 && info.AckFloor.Stream == created.Sequence,
			fmt.Sprintf("redelivered %d, ack floor %d (want %d, before the newer event %d)", info.NumRedelivered, info.AckFloor.Stream, created.Sequence, newer)
	})
	mu.Lock()
	if !slices.Equal(handled, []uint64{created.Sequence}) {
		t.Errorf("handled %v, want only the task's creation %d", handled, created.Sequence)
	}
	mu.Unlock()

	// Reading the chain: unavailable until a newer build reads it.
	_, err = l.ReadAfter(ctx, "newer", 0)
	if errs.CodeOf(err) != errs.Unavailable || !errors.Is(err, event.ErrUnknownType) {
		t.Errorf("reading the chain: %v (code %v), want unavailable naming the unknown type", err, errs.CodeOf(err))
	}

	// A follower goes past it and sets nothing aside.
	fctx, cancel := context.WithCancel(ctx)
	defer cancel()
	skipped := make(chan uint64, 1)
	go func() {
		_ = l.Follow(fctx, "newer", 0, func(*stewardv1.EventRecord) error { return nil }, func(seq uint64, err error) {
			if errors.Is(err, event.ErrUnknownType) {
				skipped <- seq
			}
		})
	}()
	select {
	case seq := <-skipped:
		if seq != newer {
			t.Errorf("the follower passed over %d, want %d", seq, newer)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the follower never reported the newer event")
	}
	if dead := deadLetters(t, l); len(dead) > 0 {
		t.Errorf("set aside %+v, want nothing: the event is a newer build's, not bad", dead)
	}
}

// TestANewerSoleFilterIsKept: a consumer a newer replica made over its one
// new type (which the server may hold as FilterSubject rather than
// FilterSubjects) keeps that filter when this build makes it again.
func TestANewerSoleFilterIsKept(t *testing.T) {
	l, bus := stewardtest.OpenLog(t)
	newer := l.TypeFilter(stewardtest.NewerType)
	if cfg := remade(t, l, bus.JS, jetstream.ConsumerConfig{Durable: "sole", FilterSubject: newer}); !slices.Contains(cfg.FilterSubjects, newer) {
		t.Fatalf("filters %v (%q): the newer type's was dropped", cfg.FilterSubjects, cfg.FilterSubject)
	}
}
