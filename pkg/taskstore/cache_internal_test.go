package taskstore

import (
	"context"
	"testing"

	"github.com/steward-run/steward/pkg/event"
	"github.com/steward-run/steward/pkg/eventlog"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/stewardtest"
)

// TestHistoryIsAsOfItsFold: folds of one task share one id set, and a
// newer fold adds ids to it; the history Load returns with an older fold
// must not find them, or a caller would look for an event's effect in a
// task that does not have it yet.
func TestHistoryIsAsOfItsFold(t *testing.T) {
	ctx := context.Background()
	log, _ := stewardtest.OpenLog(t)
	created, err := event.New(event.Meta{ID: event.ID("t1", "created"), TaskID: "t1"}, &stewardv1.TaskCreated{Contract: &stewardv1.TaskContract{Intent: "i"}})
	if err == nil {
		_, err = log.Append(ctx, eventlog.Head{}, created)
	}
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []event.Payload{
		&stewardv1.TaskStarted{},
		&stewardv1.TaskPaused{Reason: "later"},
	} {
		if _, err := Update(ctx, log, "t1", func(*stewardv1.Task) (*stewardv1.Event, error) {
			return event.New(event.Meta{ID: event.ID("t1", string(p.ProtoReflect().Descriptor().Name())), TaskID: "t1"}, p)
		}); err != nil {
			t.Fatal(err)
		}
	}
	recs, err := log.Read(ctx, "t1")
	if err != nil {
		t.Fatal(err)
	}
	older, err := (&folded{}).extend(recs[:2])
	if err != nil {
		t.Fatal(err)
	}
	if _, err := older.extend(recs[2:]); err != nil { // shares older's id set
		t.Fatal(err)
	}
	h := history{set: older.ids, upTo: older.task.LastSequence}
	if !h.Has(recs[1].Event.EventId) || h.Has(recs[2].Event.EventId) {
		t.Fatalf("the history of a fold up to %d: has the start %v, has the pause %v; want true, false",
			older.task.LastSequence, h.Has(recs[1].Event.EventId), h.Has(recs[2].Event.EventId))
	}
}
