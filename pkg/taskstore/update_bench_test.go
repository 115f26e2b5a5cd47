package taskstore_test

import (
	"context"
	"testing"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/stewardtest"
	"github.com/steward-run/steward/pkg/taskstore"
)

// BenchmarkUpdate measures one write through the shared write loop on a
// task it has seen before: read what is new, check, append.
func BenchmarkUpdate(b *testing.B) {
	log, _ := stewardtest.OpenLog(b)
	ctx := context.Background()
	stewardtest.Append(b, log, "t", &stewardv1.TaskCreated{Contract: &stewardv1.TaskContract{Intent: "x"}})
	paused := false
	for b.Loop() {
		_, err := taskstore.Update(ctx, log, "t", func(*stewardv1.Task) (*stewardv1.Event, error) {
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
