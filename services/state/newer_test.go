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

// TestAWithheldTaskAcrossASnapshot: a snapshot of an older build's views
// carries a task it withholds for a newer build's event, so a restart of
// that build goes on withholding it (its view stops before the event); a
// plane of another build (Config.Build, as steward serve names it) refuses
// the snapshot and folds the log, where a newer build can read the event.
func TestAWithheldTaskAcrossASnapshot(t *testing.T) {
	env := stewardtest.NewEnv(t)
	ctx := context.Background()
	views := openViews(t, env)
	k := contract(1)
	k.TaskId = "newer"
	created := stewardtest.AppendAfter(t, env.Log, eventlog.Head{}, "newer", &stewardv1.TaskCreated{Contract: k})
	newer := stewardtest.AppendNewer(t, env.Log, env.JS, created)
	stewardtest.AppendAfter(t, env.Log, newer, "newer", &stewardv1.TaskStarted{})
	older := startPlane(t, env.Log, env.Logger, state.Config{Views: views, Build: "v1.4.0 3fa2337"})
	caughtUp(t, env, older.Views())
	covered, err := older.SaveSnapshot(ctx)
	if err != nil || covered == 0 {
		t.Fatalf("snapshot: covered %d, %v", covered, err)
	}
	again := startPlane(t, env.Log, env.Logger, state.Config{Views: views, Build: "v1.4.0 3fa2337"})
	if got := again.SnapshotCovered(); got != covered {
		t.Fatalf("the same build started from %d, want its snapshot's %d", got, covered)
	}
	if _, err := again.Views().Get("newer"); errs.CodeOf(err) != errs.Unavailable {
		t.Errorf("after a start from the snapshot: %v (%v), want the task still withheld", err, errs.CodeOf(err))
	}
	upgraded := startPlane(t, env.Log, env.Logger, state.Config{Views: views, Build: "v1.5.0 71f5e2d"})
	if got := upgraded.SnapshotCovered(); got != 0 {
		t.Errorf("another build started from the older one's snapshot (covering %d): its views, and what it withholds, are not this build's", got)
	}
}
