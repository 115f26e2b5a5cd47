package control_test

import (
	"context"
	"testing"

	"github.com/steward-run/steward/pkg/eventlog"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/services/control"
)

// TestRolloutStartedElsewhereIsSeen: a plane keeps the ids of the
// rollouts started (rollout_index.go); a rollout another plane starts,
// through a log of its own, is seen by this plane's next task creation
// and next proposal all the same, and so is a second one.
func TestRolloutStartedElsewhereIsSeen(t *testing.T) {
	r := rolloutHarness(t)
	ctx := context.Background()
	log, err := eventlog.Open(ctx, r.JS, r.Log.Config())
	if err != nil {
		t.Fatal(err)
	}
	other := control.New(log, r.Logger, r.config())
	t.Cleanup(other.Stop)
	before := r.runningTask(t, "before", stewardv1.RecoveryMode_RECOVERY_MODE_UNSPECIFIED, nil)
	if a := r.propose(t, before, "p1", "write", "doc", map[string]any{"text": "x"}); a.ToolVersion != "2" || a.RolloutId != "" {
		t.Fatalf("with no rollout, write@%s under %q, want write@2", a.ToolVersion, a.RolloutId)
	}
	for range 2 {
		ro, err := other.StartRollout(ctx, "ops", writeSpec(100))
		if err != nil {
			t.Fatal(err)
		}
		tid := r.runningTask(t, "after-"+ro.RolloutId, stewardv1.RecoveryMode_RECOVERY_MODE_UNSPECIFIED, nil)
		if as := r.task(t, tid).RolloutAssignments; len(as) != 1 || as[0].RolloutId != ro.RolloutId {
			t.Fatalf("a task created after rollout %s started elsewhere was assigned %v", ro.RolloutId, as)
		}
		if a := r.propose(t, tid, "p1", "write", "doc", map[string]any{"text": "x"}); a.ToolVersion != "2" || a.RolloutId != ro.RolloutId {
			t.Fatalf("under rollout %s started elsewhere, write@%s under %q, want write@2", ro.RolloutId, a.ToolVersion, a.RolloutId)
		}
		if _, err := other.RollBackRollout(ctx, "ops", ro.RolloutId, "next"); err != nil {
			t.Fatal(err)
		}
		// The task created before either rollout takes the stable
		// version of the latest one rolled back, from its next proposal.
		if a := r.propose(t, before, "p2-"+ro.RolloutId, "write", "doc", map[string]any{"text": "y"}); a.ToolVersion != "1" || a.RolloutId != ro.RolloutId {
			t.Fatalf("after rollout %s rolled back elsewhere, write@%s under %q, want write@1 under it", ro.RolloutId, a.ToolVersion, a.RolloutId)
		}
	}
}
