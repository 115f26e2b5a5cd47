package taskstore_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/steward-run/steward/pkg/event"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/stewardtest"
)

// BenchmarkUpdate measures one write through the shared write loop on a
// task it has seen before: read what is new, check, append.
func BenchmarkUpdate(b *testing.B) {
	log, _ := stewardtest.OpenLog(b)
	ctx := context.Background()
	stewardtest.Append(b, log, "t", &stewardv1.TaskCreated{Contract: &stewardv1.TaskContract{Intent: "x"}})
	paused := false
	for b.Loop() {
		_, err := tasksOf(log).Update(ctx, "t", func(*stewardv1.Task) (*stewardv1.Event, error) {
			paused = !paused
			if paused {
				return stewardtest.Event(b, "t", &stewardv1.TaskPaused{}), nil
			}
			return stewardtest.Event(b, "t", &stewardv1.TaskResumed{}), nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkWriteBySize measures the same write on tasks that already hold
// n actions: a write must not cost more on a bigger task.
func BenchmarkWriteBySize(b *testing.B) {
	for _, n := range []int{1, 100, 1000} {
		b.Run(fmt.Sprintf("actions=%d", n), func(b *testing.B) {
			log, _ := stewardtest.OpenLog(b)
			ctx := context.Background()
			id := "sized"
			history := []event.Payload{&stewardv1.TaskCreated{Contract: &stewardv1.TaskContract{Intent: "x", AllowedTools: []string{"t"}}}, &stewardv1.TaskStarted{}}
			for i := range n {
				a := fmt.Sprintf("a%d", i)
				history = append(history,
					&stewardv1.ActionProposed{Action: &stewardv1.Action{ActionId: a, Tool: "t", Target: "x", ActionHash: "h" + a, RequestHash: "r" + a}},
					&stewardv1.PolicyEvaluated{ActionId: a, Snapshot: &stewardv1.PolicySnapshot{SnapshotId: "s" + a, Decision: stewardv1.PolicyDecision_POLICY_DECISION_DENY, Reasons: []string{"no"}}})
			}
			stewardtest.Append(b, log, id, history...)
			paused := false
			for b.Loop() {
				err := tasksOf(log).Write(ctx, id, func(*stewardv1.Task) (*stewardv1.Event, error) {
					paused = !paused
					if paused {
						return stewardtest.Event(b, id, &stewardv1.TaskPaused{}), nil
					}
					return stewardtest.Event(b, id, &stewardv1.TaskResumed{}), nil
				})
				if err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
