package taskstore_test

import (
	"testing"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/stewardtest"
	"github.com/steward-run/steward/pkg/taskstore"
)

// TestHistoryIsAsOfItsFold: folds of one task share one id set, and a
// newer fold adds ids to it; the history Load returns with an older fold
// must not find them, or a caller would look for an event's effect in a
// task that does not have it yet.
func TestHistoryIsAsOfItsFold(t *testing.T) {
	recs := stewardtest.History(t, "t1",
		&stewardv1.TaskCreated{Contract: &stewardv1.TaskContract{Intent: "i"}}, &stewardv1.TaskStarted{}, &stewardv1.TaskPaused{Reason: "later"})
	h, err := taskstore.FoldInTwo(recs, 2)
	if err != nil {
		t.Fatal(err)
	}
	if !h.Has(recs[1].Event.EventId) || h.Has(recs[2].Event.EventId) {
		t.Fatalf("the history of a fold up to the start: has the start %v, has the pause %v; want true, false",
			h.Has(recs[1].Event.EventId), h.Has(recs[2].Event.EventId))
	}
}
