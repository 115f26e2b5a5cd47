package eventlog_test

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/steward-run/steward/pkg/event"
	"github.com/steward-run/steward/pkg/eventlog"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/stewardtest"
)

// TestAGapIsReadUpToTheHandedEventsPredecessor: a reaction's read of the
// events between its fold and the event it holds returns exactly those,
// in order, with other tasks' events stored between and later events of
// the task stored after, in one direct get per event: the one before the
// handed event is known by the handed event's prev_hash, so no get looks
// for it again. A handed event that names no predecessor read (a fold
// that would refuse the gap) reads on to it, as before.
func TestAGapIsReadUpToTheHandedEventsPredecessor(t *testing.T) {
	l, bus := stewardtest.OpenLog(t)
	ctx := context.Background()
	recs := appendTask(t, l, "gappy", 40)
	gets := countDirectGets(t, bus)
	for _, c := range []struct{ after, handled int }{
		{after: 10, handled: 11}, // none between
		{after: 10, handled: 12}, // one
		{after: 10, handled: 14}, // three, others' events among them
		{after: 0, handled: 30},  // many
	} {
		gap, err := l.ReadUpTo(ctx, "gappy", headOf(recs[c.after]), recs[c.handled])
		if err != nil {
			t.Fatal(err)
		}
		want := recs[c.after+1 : c.handled+1]
		if !slices.Equal(sequences(gap), sequences(want)) {
			t.Fatalf("the gap after %d read %v, want %v", c.after, sequences(gap), sequences(want))
		}
		if got, between := gets.take(t), c.handled-c.after-1; got != between {
			t.Errorf("a gap of %d events took %d direct gets, want %d", between, got, between)
		}
	}
	// A handed event whose prev_hash names no event read: the read goes
	// on to it, with the get that finds it.
	stray := &stewardv1.EventRecord{Sequence: recs[14].Sequence, Event: &stewardv1.Event{PrevHash: []byte("no such event")}}
	gap, err := l.ReadUpTo(ctx, "gappy", headOf(recs[10]), stray)
	if err != nil {
		t.Fatal(err)
	}
	if want := sequences(recs[11:15]); !slices.Equal(sequences(gap), want) {
		t.Fatalf("a gap to an unlinked event read %v, want %v", sequences(gap), want)
	}
	if got := gets.take(t); got != 4 {
		t.Errorf("a gap of 3 events to an unlinked one took %d direct gets, want 4", got)
	}
}

// TestWhatIsNewIsReadBackFromTheLast: a read of a task's events after a
// fold returns exactly them, in order, with other tasks' events stored
// between: the last read first, then one direct get per event before it,
// none to find the last again (but for the first event after the fold,
// which only the get that finds the last again can tell is the next).
func TestWhatIsNewIsReadBackFromTheLast(t *testing.T) {
	l, bus := stewardtest.OpenLog(t)
	ctx := context.Background()
	recs := appendTask(t, l, "newer", 18) // another task's event between the last two
	gets := countDirectGets(t, bus)
	for _, after := range []int{17, 16, 15, 10, 0} {
		got, err := l.ReadAfter(ctx, "newer", recs[after].Sequence)
		if err != nil {
			t.Fatal(err)
		}
		if want := sequences(recs[after+1:]); !slices.Equal(sequences(got), want) {
			t.Fatalf("after %d read %v, want %v", after, sequences(got), want)
		}
		// The last, then each before it; with none before it, one get
		// finds the last past the other task's event between.
		want := 1 + max(len(recs)-after-2, 1)
		if after == len(recs)-1 {
			want = 1
		}
		if got := gets.take(t); got != want {
			t.Errorf("reading %d new events took %d direct gets, want %d", len(recs)-after-1, got, want)
		}
	}
}

// appendTask appends n events to taskID, every third one followed by one
// of another task, so that other subjects lie between some of its events
// and not between others, and returns its records in order.
func appendTask(t *testing.T, l *eventlog.Log, taskID string, n int) []*stewardv1.EventRecord {
	t.Helper()
	ctx := context.Background()
	var recs []*stewardv1.EventRecord
	head := eventlog.Head{}
	for i := range n {
		var p event.Payload = &stewardv1.BudgetReleased{Tokens: int64(i)}
		if i == 0 {
			p = &stewardv1.TaskCreated{}
		}
		rec, err := l.Append(ctx, head, mustEvent(t, event.Meta{TaskID: taskID}, p))
		if err != nil {
			t.Fatal(err)
		}
		recs = append(recs, rec)
		head = eventlog.Head{Sequence: rec.Sequence, Hash: rec.Event.Hash}
		if i%3 != 1 {
			continue
		}
		other := fmt.Sprint(taskID, "-other-", i)
		if _, err := l.Append(ctx, eventlog.Head{}, mustEvent(t, event.Meta{TaskID: other}, &stewardv1.TaskCreated{})); err != nil {
			t.Fatal(err)
		}
	}
	return recs
}

// directGets counts the direct gets of the event stream that the server
// takes, as a subscription of a connection of its own sees them.
type directGets struct {
	nc  *nats.Conn
	sub *nats.Subscription
}

func countDirectGets(t *testing.T, bus *stewardtest.Bus) directGets {
	t.Helper()
	nc, err := bus.Server.Connect()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	sub, err := nc.SubscribeSync("$JS.API.DIRECT.GET.>")
	if err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	return directGets{nc: nc, sub: sub}
}

// take returns how many direct gets the server took since the last take:
// a read has its answers, so its requests reached the server before the
// flush, whose answer follows every copy of them sent here.
func (d directGets) take(t *testing.T) int {
	t.Helper()
	if err := d.nc.Flush(); err != nil {
		t.Fatal(err)
	}
	n := 0
	for {
		if _, err := d.sub.NextMsg(0); err != nil {
			return n
		}
		n++
	}
}

func headOf(rec *stewardv1.EventRecord) eventlog.Head {
	return eventlog.Head{Sequence: rec.Sequence, Hash: rec.Event.Hash}
}

func sequences(recs []*stewardv1.EventRecord) []uint64 {
	var out []uint64
	for _, r := range recs {
		out = append(out, r.Sequence)
	}
	return out
}
