package state_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"connectrpc.com/connect"
	"golang.org/x/sync/errgroup"

	"github.com/steward-run/steward/pkg/eventlog"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/stewardtest"
	"github.com/steward-run/steward/services/state"
)

// gatedCold reads the log once open is closed, and counts the reads
// under way at once.
type gatedCold struct {
	log      *eventlog.Log
	in, most atomic.Int32
	open     chan struct{}
}

func (g *gatedCold) Events(ctx context.Context, _, taskID string) ([]*stewardv1.EventRecord, error) {
	n := g.in.Add(1)
	defer g.in.Add(-1)
	for m := g.most.Load(); n > m && !g.most.CompareAndSwap(m, n); m = g.most.Load() {
	}
	select {
	case <-g.open:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return g.log.Read(ctx, taskID)
}

// TestColdReadsAreBounded: many callers reading an evicted task at once
// fold its history at most state.MaxColdReads at a time, so that a
// caller cannot have the plane hold any number of whole histories in
// memory at once; every read still answers.
func TestColdReadsAreBounded(t *testing.T) {
	env := stewardtest.NewEnv(t)
	writeMetricsHistories(t, env)
	g := &gatedCold{log: env.Log, open: make(chan struct{})}
	p, client, c := evictingPlane(t, env, state.Config{Cold: g})
	evictAll(t, p, c, []string{"denied"})
	var reads errgroup.Group
	for range 4 * state.MaxColdReads {
		reads.Go(func() error {
			_, err := client.GetTask(context.Background(), connect.NewRequest(&stewardv1.GetTaskRequest{TaskId: "denied"}))
			return err
		})
	}
	stewardtest.Eventually(t, 10*time.Second, func() (bool, string) {
		return g.in.Load() >= state.MaxColdReads, "the cold reads do not start"
	})
	close(g.open)
	if err := reads.Wait(); err != nil {
		t.Fatal(err)
	}
	if most := g.most.Load(); most > state.MaxColdReads {
		t.Errorf("%d cold reads at once, want at most %d", most, state.MaxColdReads)
	}
}
