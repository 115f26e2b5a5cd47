package control_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/steward-run/steward/pkg/errs"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/services/control"
)

// TestConcurrentStartsRampOne: starts of one tool racing on two planes
// past the check that none ramps: exactly one is started, the others are
// refused, and one rollout of the tool is RAMPING.
func TestConcurrentStartsRampOne(t *testing.T) {
	r := rolloutHarness(t)
	other := control.New(r.Log, r.Logger, r.config())
	t.Cleanup(other.Stop)
	const racers = 8
	errc := make(chan error, racers)
	var wg sync.WaitGroup
	for i := range racers {
		p := []interface {
			StartRollout(context.Context, string, *stewardv1.RolloutSpec) (*stewardv1.Rollout, error)
		}{r.ctl, other}[i%2]
		wg.Go(func() {
			_, err := p.StartRollout(context.Background(), "ops", writeSpec(50, 100))
			errc <- err
		})
	}
	wg.Wait()
	close(errc)
	started := 0
	for err := range errc {
		switch {
		case err == nil:
			started++
		case !errs.Is(err, errs.FailedPrecondition):
			t.Fatal(err)
		}
	}
	rs, err := r.ctl.ListRollouts(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if started != 1 || len(rs) != 1 {
		t.Fatalf("%d starts succeeded and %d rollouts exist, want 1 and 1", started, len(rs))
	}
}

// TestCreateCostIsNotEveryRolloutEver: ended rollouts, which the plane
// indexes after one read (rollout_index.go), still turn new tasks'
// versions (the latest rolled back). It logs what 10 creates cost with
// none and with 150 ended ones; a timing is not asserted.
func TestCreateCostIsNotEveryRolloutEver(t *testing.T) {
	r := rolloutHarness(t)
	ctx := context.Background()
	timeCreates := func(tag string) time.Duration {
		start := time.Now()
		for i := range 10 {
			r.runningTask(t, fmt.Sprintf("%s-%d", tag, i), stewardv1.RecoveryMode_RECOVERY_MODE_UNSPECIFIED, nil)
		}
		return time.Since(start)
	}
	base := timeCreates("before")
	for range 150 {
		ro, err := r.ctl.StartRollout(ctx, "ops", writeSpec(50, 100))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := r.ctl.RollBackRollout(ctx, "ops", ro.RolloutId, "measuring"); err != nil {
			t.Fatal(err)
		}
	}
	timeCreates("warm") // the plane reads each ended chain once
	after := timeCreates("after")
	t.Logf("10 creates: %v with no rollouts, %v with 150 ended ones", base, after)
	tid := r.runningTask(t, "last", stewardv1.RecoveryMode_RECOVERY_MODE_UNSPECIFIED, nil)
	if a := r.propose(t, tid, "p1", "write", "doc", map[string]any{"text": "x"}); a.ToolVersion != "1" {
		t.Errorf("a task after the rollbacks proposed write@%s, want write@1", a.ToolVersion)
	}
}
