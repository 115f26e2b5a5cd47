package stewardtest

import (
	"context"
	"testing"

	"github.com/steward-run/steward/pkg/event"
	"github.com/steward-run/steward/pkg/eventlog"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/taskstore"
)

// Principal is who the events a test writes in a plane's stead say
// recorded them.
const Principal = "test"

// Event returns payload as an event of task taskID, recorded as the plane
// that owns its type would record it (event.Owner).
func Event(tb testing.TB, taskID string, payload event.Payload) *stewardv1.Event {
	tb.Helper()
	ev, err := event.New(event.Meta{TaskID: taskID, Actor: &stewardv1.Actor{Principal: Principal}}, payload)
	if err != nil {
		tb.Fatal(err)
	}
	ev.Actor.Plane = event.Owner(ev.Type)
	return ev
}

// History returns payloads as task taskID's history, sealed into one
// chain as the log holds it, at sequences 1, 2, …: what a fold or an
// auditor reads, without a log.
func History(tb testing.TB, taskID string, payloads ...event.Payload) []*stewardv1.EventRecord {
	tb.Helper()
	var out []*stewardv1.EventRecord
	var prev []byte
	for i, p := range payloads {
		ev := Event(tb, taskID, p)
		if _, err := event.Seal(ev, prev); err != nil {
			tb.Fatal(err)
		}
		prev = ev.Hash
		out = append(out, &stewardv1.EventRecord{Sequence: uint64(i + 1), Event: ev})
	}
	return out
}

// Append records payloads on task taskID, one by one, as their owning
// planes would (each through taskstore.Update, so an illegal step fails
// the test), and returns the task after the last. A TaskCreated starts
// the task.
func Append(tb testing.TB, log *eventlog.Log, taskID string, payloads ...event.Payload) *stewardv1.Task {
	tb.Helper()
	return AppendEvents(tb, log, taskID, events(tb, taskID, payloads)...)
}

// events makes an event of each payload.
func events(tb testing.TB, taskID string, payloads []event.Payload) []*stewardv1.Event {
	evs := make([]*stewardv1.Event, len(payloads))
	for i, p := range payloads {
		evs[i] = Event(tb, taskID, p)
	}
	return evs
}

// AppendEvents is Append for events made by Event and then amended, for
// a test that needs another principal or time than Event's.
func AppendEvents(tb testing.TB, log *eventlog.Log, taskID string, evs ...*stewardv1.Event) *stewardv1.Task {
	tb.Helper()
	return appendThrough(tb, taskstore.New(log), taskID, evs)
}

// appendThrough is AppendEvents through tasks: a test that shares a store
// with the planes it runs (Env) sees its fold current as theirs.
func appendThrough(tb testing.TB, tasks *taskstore.Store, taskID string, evs []*stewardv1.Event) *stewardv1.Task {
	tb.Helper()
	ctx := context.Background()
	var t *stewardv1.Task
	for _, ev := range evs {
		var err error
		if ev.GetTaskCreated() != nil {
			var rec *stewardv1.EventRecord
			if rec, err = tasks.Log().Append(ctx, eventlog.Head{}, ev); err == nil {
				t, _, err = tasks.Load(ctx, rec.Event.TaskId)
			}
		} else {
			t, err = tasks.Update(ctx, taskID, func(*stewardv1.Task) (*stewardv1.Event, error) { return ev, nil })
		}
		if err != nil {
			tb.Fatalf("append %s to %s: %v", ev.Type, taskID, err)
		}
	}
	return t
}

// Append is the package's Append through e's store of its log.
func (e *Env) Append(taskID string, payloads ...event.Payload) *stewardv1.Task {
	e.tb.Helper()
	return appendThrough(e.tb, e.Tasks, taskID, events(e.tb, taskID, payloads))
}

// AppendEvents is the package's AppendEvents through e's store of its log.
func (e *Env) AppendEvents(taskID string, evs ...*stewardv1.Event) *stewardv1.Task {
	e.tb.Helper()
	return appendThrough(e.tb, e.Tasks, taskID, evs)
}
