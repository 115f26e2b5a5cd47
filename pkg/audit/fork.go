package audit

import (
	"bytes"
	"fmt"

	"google.golang.org/protobuf/proto"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/task"
)

// Fork returns where the task whose history starts with first was forked
// from, or nil for a task that is not a fork.
func Fork(first *stewardv1.Event) *stewardv1.ForkOrigin {
	return first.GetTaskCreated().GetFork()
}

// VerifyFork checks a fork's link to its parent: the parent's chain, as
// stored (events with their stream sequences), verifies up to the fork's
// point; the event there is the parent's at that sequence with the hash
// the fork names; and the state the fork started from is what
// task.ForkState makes of the parent folded up to there. So a fork cannot
// claim a history its parent did not have.
func VerifyFork(origin *stewardv1.ForkOrigin, parentEvents [][]byte, parentSeqs []uint64) error {
	if len(parentEvents) != len(parentSeqs) {
		return fmt.Errorf("fork of %s: %d parent events but %d sequences", origin.GetParentTaskId(), len(parentEvents), len(parentSeqs))
	}
	r := NewReplayer(origin.GetParentTaskId())
	for i, data := range parentEvents {
		step, err := r.Next(data, parentSeqs[i])
		if err != nil {
			return fmt.Errorf("fork of %s: the parent's chain breaks before the fork: %w", origin.GetParentTaskId(), err)
		}
		if parentSeqs[i] != origin.GetAtSequence() {
			continue
		}
		if !bytes.Equal(step.Event.Hash, origin.GetAtHash()) {
			return fmt.Errorf("fork of %s: the parent's event at sequence %d has another hash than the fork names", origin.GetParentTaskId(), origin.GetAtSequence())
		}
		if !proto.Equal(task.ForkState(step.Task), origin.GetState()) {
			return fmt.Errorf("fork of %s: the state the fork started from is not the parent's at sequence %d", origin.GetParentTaskId(), origin.GetAtSequence())
		}
		return nil
	}
	return fmt.Errorf("fork of %s: the parent has no event at sequence %d", origin.GetParentTaskId(), origin.GetAtSequence())
}
