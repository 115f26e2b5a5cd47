package state_test

import (
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/steward-run/steward/pkg/event"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/stewardtest"
	"github.com/steward-run/steward/services/state"
)

// TestReceiptShowsRolloutAssignments: the versions a task's rollouts
// assigned it at its creation are on its receipt (docs/rollouts.md).
func TestReceiptShowsRolloutAssignments(t *testing.T) {
	const id = "task-ramped"
	c := contract(1)
	c.TaskId = id
	assigned := []*stewardv1.RolloutAssignment{{RolloutId: "ro-1", Tool: "search", Version: "2", Candidate: true, Step: 1, Share: 50}}
	r, err := state.BuildReceipt(stewardtest.History(t, id, []event.Payload{
		&stewardv1.TaskCreated{Contract: c, RolloutAssignments: assigned}, &stewardv1.TaskStarted{}}...))
	if err != nil {
		t.Fatal(err)
	}
	if len(r.RolloutAssignments) != 1 || !proto.Equal(r.RolloutAssignments[0], assigned[0]) {
		t.Errorf("receipt's rollout assignments = %v, want %v", r.RolloutAssignments, assigned)
	}
}
