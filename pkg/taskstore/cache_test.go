package taskstore_test

import (
	"context"
	"testing"

	"github.com/steward-run/steward/pkg/errs"
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

// TestATaskNotFoundKeepsNoEntry: reading or writing a task that is not on
// the log must not take a place in the cache, where it would push out
// (at random) the fold of a task that is, to be read again in full.
func TestATaskNotFoundKeepsNoEntry(t *testing.T) {
	log, _ := stewardtest.OpenLog(t)
	ctx := context.Background()
	if _, _, err := tasksOf(log).Load(ctx, "nobody"); !errs.Is(err, errs.NotFound) {
		t.Fatalf("Load of a task with no events: %v, want not found", err)
	}
	if err := tasksOf(log).Write(ctx, "nobody-either", func(*stewardv1.Task) (*stewardv1.Event, error) { return nil, nil }); !errs.Is(err, errs.NotFound) {
		t.Fatalf("Write to a task with no events: %v, want not found", err)
	}
	for _, id := range []string{"nobody", "nobody-either"} {
		if taskstore.Cached(tasksOf(log), id) {
			t.Errorf("task %s, not found, keeps an entry in the cache", id)
		}
	}
	stewardtest.Append(t, log, "somebody", &stewardv1.TaskCreated{Contract: &stewardv1.TaskContract{Intent: "x"}})
	if _, _, err := tasksOf(log).Load(ctx, "somebody"); err != nil {
		t.Fatal(err)
	}
	if !taskstore.Cached(tasksOf(log), "somebody") {
		t.Fatal("a task that is found keeps no entry")
	}
}
