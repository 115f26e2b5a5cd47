package state_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/steward-run/steward/pkg/errs"
	"github.com/steward-run/steward/pkg/eventlog"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/stewardtest"
	"github.com/steward-run/steward/services/state"
)

// TestStateWithholdsANewerBuildsTask: the state plane's views pass an
// event of a type this build does not know without setting it aside, and
// withhold that task's view from it on — a view folded past a gap would
// be wrong — as unavailable, naming the event, for a newer state plane to
// serve; the other tasks are served as ever.
func TestStateWithholdsANewerBuildsTask(t *testing.T) {
	env := stewardtest.NewEnv(t)
	ctx := context.Background()
	p := startPlane(t, env.Log, env.Logger, state.Config{})
	k := contract(1)
	k.TaskId = "newer"
	created := stewardtest.AppendAfter(t, env.Log, eventlog.Head{}, "newer", &stewardv1.TaskCreated{Contract: k})
	newer := stewardtest.AppendNewer(t, env.Log, env.JS, created)
	paused := stewardtest.AppendAfter(t, env.Log, newer, "newer", &stewardv1.TaskStarted{})
	env.Append("other", &stewardv1.TaskCreated{Contract: contract(2)})
	last, err := env.Log.LastTaskSequence(ctx)
	if err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := p.Views().WaitFor(wctx, last); err != nil {
		t.Fatal(err)
	}
	_, err = p.Views().Get("newer")
	if errs.CodeOf(err) != errs.Unavailable || !strings.Contains(err.Error(), stewardtest.NewerType) {
		t.Errorf("the task with a newer build's event (its start after it, at %d): %v (%v), want unavailable naming the type", paused.Sequence, err, errs.CodeOf(err))
	}
	if _, err := p.Views().Get("other"); err != nil {
		t.Errorf("another task: %v", err)
	}
	if dead, err := env.Log.DeadLetters(ctx); err != nil || len(dead) > 0 {
		t.Errorf("set aside %+v (%v), want nothing", dead, err)
	}
}
