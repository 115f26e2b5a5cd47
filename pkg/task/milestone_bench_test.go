package task_test

import (
	"fmt"
	"testing"

	"github.com/steward-run/steward/pkg/event"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/stewardtest"
	"github.com/steward-run/steward/pkg/task"
)

// BenchmarkFoldWithMilestones folds a task of n actions and n decisions,
// each tagged with one of three milestones, with the milestones declared
// (derived after every event) and with budget lines only (nothing
// derived): what the derivation costs a replay.
func BenchmarkFoldWithMilestones(b *testing.B) {
	for _, n := range []int{100, 1000} {
		for _, declared := range []bool{false, true} {
			b.Run(fmt.Sprintf("n=%d/declared=%v", n, declared), func(b *testing.B) {
				k := &stewardv1.TaskContract{Intent: "i", Budget: &stewardv1.Budget{Milestones: []*stewardv1.MilestoneBudget{{MilestoneId: "m0"}, {MilestoneId: "m1"}, {MilestoneId: "m2"}}}}
				if declared {
					k.Milestones = []*stewardv1.Milestone{{MilestoneId: "m0", Title: "a"}, {MilestoneId: "m1", Title: "b"}, {MilestoneId: "m2", Title: "c"}}
				}
				evs := []event.Payload{&stewardv1.TaskCreated{Contract: k}, started()}
				for i := range n {
					m := fmt.Sprintf("m%d", i%3)
					evs = append(evs, tagged(fmt.Sprintf("a%d", i), m), decided(fmt.Sprintf("d%d", i), m, stewardv1.Provenance_PROVENANCE_REPORTED))
				}
				history := stewardtest.History(b, "t1", evs...)
				b.ResetTimer()
				for range b.N {
					if _, err := task.Fold(history); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
