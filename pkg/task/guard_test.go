package task

import (
	"fmt"
	"strings"
	"testing"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/raceguard"
)

// TestChangeOfASharedSubMessageIsCaught: in race-detector builds, a change
// that changes a sub-message in place rather than setting a new one
// panics, since the entry it replaces shares it.
func TestChangeOfASharedSubMessageIsCaught(t *testing.T) {
	if !raceguard.On {
		t.Skip("the check is built with the race detector")
	}
	tk := &stewardv1.Task{Actions: []*stewardv1.Action{{ActionId: "a1", Status: proposed, Snapshot: &stewardv1.PolicySnapshot{SnapshotId: "s1"}}}}
	tr := &actionChange{id: "a1", from: []stewardv1.ActionStatus{proposed},
		apply: func(a *stewardv1.Action) { a.Snapshot.SnapshotId = "s2" }} // what a change must not do
	commit, err := tr.step(tk, &stewardv1.Event{Type: "policy.evaluated"})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), "action a1 in place") {
			t.Fatalf("a shared sub-message changed in place went unnoticed: %v", r)
		}
	}()
	commit()
}

// TestChangeOfAPartInPlaceIsCaught: in race-detector builds, a fold that
// changes a part of the task in place (here, what a view may share of
// its contract) panics.
func TestChangeOfAPartInPlaceIsCaught(t *testing.T) {
	if !raceguard.On {
		t.Skip("the check is built with the race detector")
	}
	tk := &stewardv1.Task{Contract: &stewardv1.TaskContract{TaskId: "t1"}}
	kept := keepParts(tk)
	tk.Contract.Intent = "changed" // what the fold must not do
	defer func() {
		if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), "task's contract in place") {
			t.Fatalf("a part changed in place went unnoticed: %v", r)
		}
	}()
	checkParts(kept, &stewardv1.Event{Type: "task.paused"})
}
