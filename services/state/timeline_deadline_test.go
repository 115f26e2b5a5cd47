package state_test

import (
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/stewardtest"
	"github.com/steward-run/steward/services/state"
)

// TestTimelineTellsTheDeadline: the timeline says that a task was
// suspended at its deadline and why, and who extended it, from when to
// when and why.
func TestTimelineTellsTheDeadline(t *testing.T) {
	due := time.Date(2026, 12, 1, 6, 0, 0, 0, time.UTC)
	k := &stewardv1.TaskContract{Intent: "i", AccountableOwnerRef: stewardtest.Principal, Deadline: timestamppb.New(due)}
	recs := stewardtest.History(t, "t1",
		&stewardv1.TaskCreated{Contract: k},
		&stewardv1.TaskStarted{},
		&stewardv1.TaskSuspended{Reason: "its deadline 2026-12-01T06:00:00Z has passed", Cause: stewardv1.SuspendCause_SUSPEND_CAUSE_DEADLINE},
		&stewardv1.DeadlineExtended{Previous: timestamppb.New(due), Deadline: timestamppb.New(due.Add(time.Hour)), Reason: "the vendor is late"},
	)
	entries := state.Timeline(recs)
	for i, want := range map[int]string{
		2: "The task was suspended at its deadline: its deadline 2026-12-01T06:00:00Z has passed",
		3: "test via control extended the deadline from 2026-12-01T06:00:00Z to 2026-12-01T07:00:00Z: the vendor is late",
	} {
		if got := entries[i].Summary; got != want {
			t.Errorf("entry %d: %q, want %q", i, got, want)
		}
	}
}
