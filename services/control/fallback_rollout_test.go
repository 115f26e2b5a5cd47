package control_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// candidateTaskWithFallback creates running tasks allowing search and
// write, whose contract has search fall back to write on a transient
// failure, until one is assigned write's candidate by rollout id.
func candidateTaskWithFallback(t *testing.T, r *harness, id string) string {
	t.Helper()
	for i := 0; i < 64; i++ {
		req := validRequest(fmt.Sprintf("fb-%s-%d", id, i))
		req.Contract.AllowedTools = []string{"search", "write", "undo"}
		req.Contract.Fallbacks = []*stewardv1.Fallback{{Id: "fb", Kind: toolKind, Primary: "search", Fallback: "write",
			Trigger: &stewardv1.FallbackTrigger{FailureClasses: []stewardv1.FailureClass{transient}}, RetryPrimaryAfter: dur(10 * time.Minute)}}
		tk, _, err := r.ctl.CreateTask(context.Background(), "t", req)
		if err != nil {
			t.Fatal(err)
		}
		if as := tk.RolloutAssignments; len(as) == 1 && as[0].RolloutId == id && as[0].Candidate {
			r.running(tk.Contract.TaskId)
			return tk.Contract.TaskId
		}
	}
	t.Fatal("no task was assigned the candidate")
	return ""
}

// TestRepeatOnFallbackAfterItsRolloutRolledBack: a proposal redirected to
// a fallback tool under a rollout of that tool is drafted on the
// candidate; the rollout rolls back while the fallback stays engaged; the
// client's repeat of the proposal gets the action its first try recorded
// (the version it resolved to), not AlreadyExists.
func TestRepeatOnFallbackAfterItsRolloutRolledBack(t *testing.T) {
	r := rolloutHarness(t)
	ctx := context.Background()
	ro, err := r.ctl.StartRollout(ctx, "ops", writeSpec(50, 100))
	if err != nil {
		t.Fatal(err)
	}
	id := candidateTaskWithFallback(t, r, ro.RolloutId)
	text := map[string]any{"text": "x"}
	a1 := r.propose(t, id, "p1", "search", "q", text)
	r.run(t, id, a1.ActionId, failed(transient, "503"), nil, time.Now())

	a2 := r.propose(t, id, "p2", "search", "doc", text)
	if a2.Tool != "write" || a2.ToolVersion != "2" || a2.FallbackId != "fb" || a2.RolloutId != ro.RolloutId {
		t.Fatalf("p2 is %s@%s (fallback %q, rollout %q); want write@2 standing in under fb and %s", a2.Tool, a2.ToolVersion, a2.FallbackId, a2.RolloutId, ro.RolloutId)
	}
	if _, err := r.ctl.RollBackRollout(ctx, "ops", ro.RolloutId, "by hand"); err != nil {
		t.Fatal(err)
	}
	again, _, err := r.ctl.ProposeAction(ctx, "agent", &stewardv1.ProposeActionRequest{TaskId: id, ProposalId: "p2", Tool: "search", Target: "doc", Params: mustStruct(t, text)})
	if err != nil || again.ActionId != a2.ActionId {
		t.Fatalf("the repeat of p2: %v, %v; want action %s as recorded", again.GetActionId(), err, a2.ActionId)
	}
	// A new proposal takes the stable version, still on the fallback.
	if a3 := r.propose(t, id, "p3", "search", "doc", text); a3.Tool != "write" || a3.ToolVersion != "1" || a3.FallbackId != "fb" {
		t.Fatalf("p3 is %s@%s (fallback %q); want write@1 under fb", a3.Tool, a3.ToolVersion, a3.FallbackId)
	}
}

// TestFallbackFromTheCandidateCountsAsItsFailure: a candidate task whose
// calls of the rolled-out tool fell back to another tool (the candidate
// failed, the stand-in did its work) ends counted as a failure of the
// candidate: a fallback does not hide it from the rollout's judging.
func TestFallbackFromTheCandidateCountsAsItsFailure(t *testing.T) {
	r := rolloutHarness(t)
	ctx := context.Background()
	spec := writeSpec(50, 100)
	spec.MinTasks = 1
	ro, err := r.ctl.StartRollout(ctx, "ops", spec)
	if err != nil {
		t.Fatal(err)
	}
	var id string
	for i := 0; id == ""; i++ {
		req := validRequest(fmt.Sprintf("c-%d", i))
		req.Contract.AllowedTools = []string{"search", "write", "undo"}
		req.Contract.Fallbacks = []*stewardv1.Fallback{{Id: "fb", Kind: toolKind, Primary: "write", Fallback: "search",
			Trigger: &stewardv1.FallbackTrigger{FailureClasses: []stewardv1.FailureClass{transient}}, RetryPrimaryAfter: dur(10 * time.Minute)}}
		tk, _, err := r.ctl.CreateTask(ctx, "t", req)
		if err != nil {
			t.Fatal(err)
		}
		if as := tk.RolloutAssignments; len(as) == 1 && as[0].Candidate {
			id = tk.Contract.TaskId
		}
	}
	r.running(id)
	text := map[string]any{"text": "x"}
	a1 := r.propose(t, id, "p1", "write", "doc", text)
	r.run(t, id, a1.ActionId, failed(transient, "v2 broke"), nil, time.Now())
	a2 := r.propose(t, id, "p2", "write", "doc", text)
	if a2.Tool != "search" || a2.FallbackId != "fb" {
		t.Fatalf("p2 is on %s (fallback %q), want search under fb", a2.Tool, a2.FallbackId)
	}
	r.run(t, id, a2.ActionId, succeeded(), []byte(`{"ok":true}`), time.Now())
	if _, err := r.ctl.CancelTask(ctx, "ops", &stewardv1.CancelTaskRequest{TaskId: id, Reason: "done"}); err != nil {
		t.Fatal(err)
	}
	r.settle()
	if got := state(t, r, ro.RolloutId); got.State != stewardv1.RolloutState_ROLLOUT_STATE_ROLLED_BACK || got.Figures.Failed != 1 {
		t.Fatalf("rollout is %s at %v, want ROLLED_BACK counting the task that fell back from the candidate as failed", got.State, got.Figures)
	}
}
