package taskstore_test

import (
	"context"
	"testing"

	"github.com/steward-run/steward/pkg/event"
	"github.com/steward-run/steward/pkg/eventlog"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/stewardtest"
	"github.com/steward-run/steward/pkg/taskstore"
)

// BenchmarkUpdate measures one write through the shared write loop on a
// task it has seen before: read what is new, check, append.
func BenchmarkUpdate(b *testing.B) {
	log, _ := stewardtest.OpenLog(b)
	ctx := context.Background()
	ev, _ := event.New(event.Meta{TaskID: "t"}, &stewardv1.TaskCreated{Contract: &stewardv1.TaskContract{Intent: "x"}})
	if _, err := log.Append(ctx, eventlog.Head{}, ev); err != nil {
		b.Fatal(err)
	}
	paused := false
	for b.Loop() {
		_, err := taskstore.Update(ctx, log, "t", func(*stewardv1.Task) (*stewardv1.Event, error) {
			paused = !paused
			if paused {
				return event.New(event.Meta{TaskID: "t"}, &stewardv1.TaskPaused{})
			}
			return event.New(event.Meta{TaskID: "t"}, &stewardv1.TaskResumed{})
		})
		if err != nil {
			b.Fatal(err)
		}
	}
}
