package taskstore

import (
	"testing"

	"github.com/steward-run/steward/pkg/event"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// TestHistoryIsAsOfItsFold: folds of one task share one id set, and a
// newer fold adds ids to it; the history Load returns with an older fold
// must not find them, or a caller would look for an event's effect in a
// task that does not have it yet.
func TestHistoryIsAsOfItsFold(t *testing.T) {
	// Built here, not with the test kit, which stands on this package.
	var recs []*stewardv1.EventRecord
	var prev []byte
	for i, p := range []event.Payload{
		&stewardv1.TaskCreated{Contract: &stewardv1.TaskContract{Intent: "i"}},
		&stewardv1.TaskStarted{},
		&stewardv1.TaskPaused{Reason: "later"},
	} {
		ev, err := event.New(event.Meta{TaskID: "t1", Actor: &stewardv1.Actor{Principal: "test"}}, p)
		if err != nil {
			t.Fatal(err)
		}
		ev.Actor.Plane = event.Owner(ev.Type)
		if _, err := event.Seal(ev, prev); err != nil {
			t.Fatal(err)
		}
		prev = ev.Hash
		recs = append(recs, &stewardv1.EventRecord{Sequence: uint64(i + 1), Event: ev})
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
