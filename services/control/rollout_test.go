package control_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/steward-run/steward/pkg/errs"
	"github.com/steward-run/steward/pkg/event"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/rollout"
	"github.com/steward-run/steward/pkg/rpc"
	"github.com/steward-run/steward/services/control"
)

// rolloutHarness is the harness with write@2 registered after write@1, so
// that without a rollout a new task takes write@2.
func rolloutHarness(t *testing.T) *harness {
	t.Helper()
	r := newHarness(t)
	r.register(t, &stewardv1.ToolContract{Name: "write", Version: "2", EffectClass: stewardv1.EffectClass_EFFECT_CLASS_REVERSIBLE_WRITE,
		DataSensitivity: stewardv1.DataSensitivity_DATA_SENSITIVITY_INTERNAL, CompensatingTool: "undo", ParametersSchema: `{"type":"object","required":["text"]}`})
	return r
}

func writeSpec(steps ...uint32) *stewardv1.RolloutSpec {
	return &stewardv1.RolloutSpec{Tool: "write", CandidateVersion: "2", StableVersion: "1", Steps: steps, MinTasks: 2, MaxFailureRate: 0.5}
}

// rolloutTasks creates running tasks until it has n of each assignment by
// rollout id, and returns the candidate's and the stable's.
func rolloutTasks(t *testing.T, r *harness, id string, n int) (candidate, stable []string) {
	t.Helper()
	for i := 0; len(candidate) < n || len(stable) < n; i++ {
		tid := r.runningTask(t, fmt.Sprintf("%s-%d", id, i), stewardv1.RecoveryMode_RECOVERY_MODE_UNSPECIFIED, nil)
		as := r.task(t, tid).RolloutAssignments
		if len(as) != 1 || as[0].RolloutId != id || as[0].Candidate != rollout.Candidate(id, tid, as[0].Share) {
			t.Fatalf("task %s assigned %v, want one assignment by %s as its hash says", tid, as, id)
		}
		if as[0].Candidate {
			candidate = append(candidate, tid)
		} else {
			stable = append(stable, tid)
		}
	}
	return candidate, stable
}

func state(t *testing.T, r *harness, id string) *stewardv1.Rollout {
	t.Helper()
	ro, err := r.ctl.GetRollout(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return ro
}

// TestRolloutRollsBackAndRunningTasksTakeStable: candidate tasks take
// write@2 and stable ones write@1; once min_tasks candidates failed the
// rollout rolls back naming its figures, and then a running candidate
// task and a new task both take write@1. A restart in the middle of the
// step keeps the count, and a redelivery counts no end twice.
func TestRolloutRollsBackAndRunningTasksTakeStable(t *testing.T) {
	r := rolloutHarness(t)
	ctx := context.Background()
	ro, err := r.ctl.StartRollout(ctx, "ops", writeSpec(50, 100))
	if err != nil {
		t.Fatal(err)
	}
	candidate, stable := rolloutTasks(t, r, ro.RolloutId, 3)
	for i, tid := range append([]string{candidate[0]}, stable[0]) {
		want := []string{"2", "1"}[i]
		if a := r.propose(t, tid, "p1", "write", "doc", map[string]any{"text": "x"}); a.ToolVersion != want || a.RolloutId != ro.RolloutId {
			t.Errorf("task %s proposed write@%s under rollout %q, want write@%s under %s", tid, a.ToolVersion, a.RolloutId, want, ro.RolloutId)
		}
	}

	// One candidate fails; the plane restarts (and sees every event again).
	if _, err := r.ctl.FailTask(ctx, "ops", &stewardv1.FailTaskRequest{TaskId: candidate[0], Reason: "v2 broke"}); err != nil {
		t.Fatal(err)
	}
	r.settle()
	r.redeliver(t)
	if f := state(t, r, ro.RolloutId).Figures; f.Ended != 1 || f.Failed != 1 {
		t.Fatalf("after a restart the step counts %v, want the one failure once", f)
	}
	// A stable task's end is not the candidate's: it counts nothing.
	if _, err := r.ctl.FailTask(ctx, "ops", &stewardv1.FailTaskRequest{TaskId: stable[1], Reason: "other"}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.ctl.FailTask(ctx, "ops", &stewardv1.FailTaskRequest{TaskId: candidate[1], Reason: "v2 broke"}); err != nil {
		t.Fatal(err)
	}
	r.settle()
	got := state(t, r, ro.RolloutId)
	if got.State != stewardv1.RolloutState_ROLLOUT_STATE_ROLLED_BACK || got.Figures.Failed != 2 || got.Figures.Ended != 2 ||
		!strings.Contains(got.Reason, "2 of 2 candidate tasks failed") {
		t.Fatalf("rollout is %s at %v (%q), want ROLLED_BACK naming 2 of 2 failed", got.State, got.Figures, got.Reason)
	}

	// The running candidate task and a new one take the stable version.
	if a := r.propose(t, candidate[2], "p2", "write", "doc", map[string]any{"text": "y"}); a.ToolVersion != "1" || a.RolloutId != ro.RolloutId {
		t.Errorf("a running candidate task after the rollback proposed write@%s (%q), want write@1", a.ToolVersion, a.RolloutId)
	}
	later := r.runningTask(t, "after", stewardv1.RecoveryMode_RECOVERY_MODE_UNSPECIFIED, nil)
	if as := r.task(t, later).RolloutAssignments; len(as) != 0 {
		t.Errorf("a task created after the rollback was assigned %v", as)
	}
	if a := r.propose(t, later, "p1", "write", "doc", map[string]any{"text": "z"}); a.ToolVersion != "1" {
		t.Errorf("a new task after the rollback proposed write@%s, want write@1", a.ToolVersion)
	}
	// A hand rollback of a rollback is refused; replay gives the same view.
	if _, err := r.ctl.RollBackRollout(ctx, "ops", ro.RolloutId, "again"); !errs.Is(err, errs.FailedPrecondition) {
		t.Errorf("rolling back a rolled-back rollout: %v", err)
	}
	r.redeliver(t)
	if again := state(t, r, ro.RolloutId); !proto.Equal(again, got) {
		t.Errorf("after replay the rollout reads %v, want %v", again, got)
	}
}

// TestRolloutWidensToCompleted: a healthy candidate widens step by step,
// each step's tasks assigned under its share, to COMPLETED; then a task
// assigned the stable version takes the candidate.
func TestRolloutWidensToCompleted(t *testing.T) {
	r := rolloutHarness(t)
	ctx := context.Background()
	spec := writeSpec(10, 50, 100)
	spec.MinTasks = 1
	ro, err := r.ctl.StartRollout(ctx, "ops", spec)
	if err != nil {
		t.Fatal(err)
	}
	keptStable := "" // a task assigned the stable version, still running
	for step, share := range spec.Steps {
		var tid string
		for i := 0; tid == "" || keptStable == ""; i++ { // a candidate task of this step
			id := r.runningTask(t, fmt.Sprintf("s%d-%d", step, i), stewardv1.RecoveryMode_RECOVERY_MODE_UNSPECIFIED, nil)
			a := r.task(t, id).RolloutAssignments[0]
			if a.Share != share || a.Step != uint32(step) {
				t.Fatalf("task %s assigned at step %d share %d, want step %d share %d", id, a.Step, a.Share, step, share)
			}
			if a.Candidate && tid == "" {
				tid = id
			} else if !a.Candidate && keptStable == "" {
				keptStable = id
			}
		}
		if _, err := r.ctl.CancelTask(ctx, "ops", &stewardv1.CancelTaskRequest{TaskId: tid, Reason: "done"}); err != nil {
			t.Fatal(err)
		}
		r.settle()
		if got := state(t, r, ro.RolloutId); step < 2 && (got.Step != uint32(step+1) || got.State != stewardv1.RolloutState_ROLLOUT_STATE_RAMPING) {
			t.Fatalf("after step %d: at step %d, %s", step, got.Step, got.State)
		}
	}
	if got := state(t, r, ro.RolloutId); got.State != stewardv1.RolloutState_ROLLOUT_STATE_COMPLETED {
		t.Fatalf("rollout is %s, want COMPLETED", got.State)
	}
	if a := r.propose(t, keptStable, "p1", "write", "doc", map[string]any{"text": "z"}); a.ToolVersion != "2" || a.RolloutId != ro.RolloutId {
		t.Errorf("after completion a task assigned the stable version proposed write@%s (%q), want write@2 under the rollout", a.ToolVersion, a.RolloutId)
	}
	// A new task takes write@2, the latest, which the rollout leaves alone.
	later := r.runningTask(t, "after", stewardv1.RecoveryMode_RECOVERY_MODE_UNSPECIFIED, nil)
	if a := r.propose(t, later, "p1", "write", "doc", map[string]any{"text": "z"}); a.ToolVersion != "2" || a.RolloutId != "" {
		t.Errorf("after completion a new task proposed write@%s (%q), want write@2", a.ToolVersion, a.RolloutId)
	}
}

// TestTwoPlanesRollBackOnce: two control planes seeing the same ends at
// once count each once and append one RolloutRolledBack.
func TestTwoPlanesRollBackOnce(t *testing.T) {
	r := rolloutHarness(t)
	ctx := context.Background()
	ro, err := r.ctl.StartRollout(ctx, "ops", writeSpec(50, 100))
	if err != nil {
		t.Fatal(err)
	}
	candidate, _ := rolloutTasks(t, r, ro.RolloutId, 3)
	var ends []*stewardv1.EventRecord
	for _, tid := range candidate {
		if _, err := r.ctl.FailTask(ctx, "ops", &stewardv1.FailTaskRequest{TaskId: tid, Reason: "v2 broke"}); err != nil {
			t.Fatal(err)
		}
		recs, err := r.Log.Read(ctx, tid)
		if err != nil {
			t.Fatal(err)
		}
		ends = append(ends, recs[len(recs)-1])
	}
	other := control.New(r.Log, r.Logger, r.config()) // its reactions do not run
	t.Cleanup(other.Stop)
	var wg sync.WaitGroup
	for _, p := range []interface {
		RolloutTaskEnded(context.Context, *stewardv1.EventRecord) error
	}{r.ctl, other} {
		for _, rec := range ends {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := p.RolloutTaskEnded(ctx, rec); err != nil {
					t.Error(err)
				}
			}()
		}
	}
	wg.Wait()
	r.settle()
	recs, err := r.Log.ReadRollout(ctx, ro.RolloutId)
	if err != nil {
		t.Fatal(err)
	}
	counts := map[string]int{}
	for _, rec := range recs {
		counts[event.TypeOf(rec.Event)]++
	}
	if counts[event.TypeRolloutRolledBack] != 1 || counts[event.TypeRolloutTaskEnded] < 2 || counts[event.TypeRolloutTaskEnded] > 3 {
		t.Errorf("the chain holds %v, want one rollback and each end counted once before it", counts)
	}
}

// TestRolloutRefusals: bad requests name their field; another tenant
// neither sees nor rolls back a rollout; one tool ramps once at a time.
func TestRolloutRefusals(t *testing.T) {
	r := rolloutHarness(t)
	ctx := context.Background()
	for _, tc := range []struct {
		field string
		spec  *stewardv1.RolloutSpec
	}{
		{"spec", nil},
		{"spec.candidate_version", &stewardv1.RolloutSpec{Tool: "write", CandidateVersion: "9", StableVersion: "1", Steps: []uint32{100}, MinTasks: 1}},
		{"spec.stable_version", &stewardv1.RolloutSpec{Tool: "write", CandidateVersion: "2", StableVersion: "9", Steps: []uint32{100}, MinTasks: 1}},
		{"spec.steps[0]", &stewardv1.RolloutSpec{Tool: "write", CandidateVersion: "2", StableVersion: "1", Steps: []uint32{50}, MinTasks: 1}},
	} {
		var e *errs.Error
		if _, err := r.ctl.StartRollout(ctx, "ops", tc.spec); !errs.Is(err, errs.Invalid) || !errors.As(err, &e) || e.Field != tc.field {
			t.Errorf("%v: got %v, want invalid %s", tc.spec, err, tc.field)
		}
	}
	ro, err := r.ctl.StartRollout(ctx, "ops", writeSpec(100))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.ctl.StartRollout(ctx, "ops", writeSpec(100)); !errs.Is(err, errs.FailedPrecondition) {
		t.Errorf("a second rollout of a ramping tool: %v", err)
	}
	var e *errs.Error
	if _, err := r.ctl.RollBackRollout(ctx, "ops", ro.RolloutId, ""); !errors.As(err, &e) || e.Field != "reason" {
		t.Errorf("a rollback without a reason: %v", err)
	}
	acme := rpc.WithIdentity(ctx, rpc.Identity{Principal: "ops@acme", Tenant: "acme"})
	if _, err := r.ctl.GetRollout(acme, ro.RolloutId); !errs.Is(err, errs.NotFound) {
		t.Errorf("another tenant's get: %v", err)
	}
	if _, err := r.ctl.RollBackRollout(acme, "ops@acme", ro.RolloutId, "mine now"); !errs.Is(err, errs.NotFound) {
		t.Errorf("another tenant's rollback: %v", err)
	}
	if rs, err := r.ctl.ListRollouts(acme); err != nil || len(rs) != 0 {
		t.Errorf("another tenant lists %v, %v", rs, err)
	}
	if got, err := r.ctl.RollBackRollout(ctx, "ops", ro.RolloutId, "by hand"); err != nil || got.State != stewardv1.RolloutState_ROLLOUT_STATE_ROLLED_BACK || got.RolledBackBy != "ops" {
		t.Errorf("a hand rollback: %v, %v", got, err)
	}
	if rs, err := r.ctl.ListRollouts(ctx); err != nil || len(rs) != 1 {
		t.Errorf("the tenant lists %v, %v", rs, err)
	}
}
