package state_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/steward-run/steward/pkg/event"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/stewardtest"
	"github.com/steward-run/steward/services/state"
)

// BenchmarkProjectionRebuild measures how fast a state plane rebuilds its
// views from the log on start: 5,000 tasks of 4 events each. Run:
//
//	go test -run '^$' -bench ProjectionRebuild -benchtime 3x ./services/state/
func BenchmarkProjectionRebuild(b *testing.B) {
	const tasks, perTask = 5000, 4
	env := stewardtest.NewEnv(b)
	log := env.Log
	ctx := context.Background()
	for i := range tasks {
		env.Append(event.RandomID(), []event.Payload{
			&stewardv1.TaskCreated{Contract: contract(i)}, &stewardv1.TaskStarted{},
			&stewardv1.TaskPaused{Reason: "r"}, &stewardv1.TaskResumed{},
		}[:perTask]...)
	}
	const last = tasks * perTask
	b.ResetTimer()
	start := time.Now()
	for b.Loop() {
		p := state.NewProjection(slog.New(slog.DiscardHandler))
		fctx, cancel := context.WithCancel(ctx)
		go func() { _ = log.Follow(fctx, "", 0, p.Apply, nil) }()
		if err := p.WaitFor(ctx, last); err != nil {
			b.Fatal(err)
		}
		cancel()
		if len(p.Snapshot()) != tasks {
			b.Fatal("rebuild lost tasks")
		}
	}
	b.ReportMetric(float64(last*b.N)/time.Since(start).Seconds(), "events/s")
}
