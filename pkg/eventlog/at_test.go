package eventlog_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/steward-run/steward/pkg/errs"
	"github.com/steward-run/steward/pkg/event"
	"github.com/steward-run/steward/pkg/eventlog"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/stewardtest"
)

// TestLastTaskSequenceFromEndSkipsOtherChains: on an empty stream it is
// 0; behind a few messages of other chains, or more than it walks back,
// it is the last task event's sequence, as LastTaskSequence says.
func TestLastTaskSequenceFromEndSkipsOtherChains(t *testing.T) {
	l, bus := stewardtest.OpenLog(t)
	ctx := context.Background()
	want := func(seq uint64) {
		t.Helper()
		got, err := l.LastTaskSequenceFromEnd(ctx)
		slow, serr := l.LastTaskSequence(ctx)
		if err != nil || serr != nil || got != seq || slow != seq {
			t.Fatalf("LastTaskSequenceFromEnd %d (%v), LastTaskSequence %d (%v); want %d", got, err, slow, serr, seq)
		}
	}
	want(0)
	others := func(n int) {
		for i := range n {
			if _, err := bus.JS.Publish(ctx, fmt.Sprintf("%s.s%d.noted", l.Config().ServicePrefix, i), []byte("x")); err != nil {
				t.Fatal(err)
			}
		}
	}
	others(3)
	want(0)
	rec, err := l.Append(ctx, eventlog.Head{}, mustEvent(t, event.Meta{TaskID: "t1"}, &stewardv1.TaskCreated{}))
	if err != nil {
		t.Fatal(err)
	}
	want(rec.Sequence)
	others(3)
	want(rec.Sequence)
	others(100)
	want(rec.Sequence)
}

// TestEventAtIsThatTasksEventOnly: EventAt gives a task's own event at its
// sequence, and NotFound for another task's sequence or one past the end.
func TestEventAtIsThatTasksEventOnly(t *testing.T) {
	l, _ := stewardtest.OpenLog(t)
	ctx := context.Background()
	a, err := l.Append(ctx, eventlog.Head{}, mustEvent(t, event.Meta{TaskID: "a"}, &stewardv1.TaskCreated{}))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append(ctx, eventlog.Head{}, mustEvent(t, event.Meta{TaskID: "b"}, &stewardv1.TaskCreated{})); err != nil {
		t.Fatal(err)
	}
	got, err := l.EventAt(ctx, "a", a.Sequence)
	if err != nil || string(got.Event.Hash) != string(a.Event.Hash) {
		t.Fatalf("EventAt(a, %d): %v, %v; want a's event", a.Sequence, got, err)
	}
	for _, c := range []struct {
		task string
		seq  uint64
	}{{"b", a.Sequence}, {"a", a.Sequence + 100}} {
		if _, err := l.EventAt(ctx, c.task, c.seq); !errs.Is(err, errs.NotFound) {
			t.Fatalf("EventAt(%s, %d): %v; want NotFound", c.task, c.seq, err)
		}
	}
}
