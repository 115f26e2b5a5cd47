package control_test

import (
	"context"
	"testing"
	"time"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/task"
)

// TestClientRetryOfAProposalKeepsItsTool: a client repeating a proposal
// (its first answer lost) gets the action its first try recorded, on the
// tool it was drafted against, though the fallback engaged or cleared in
// between — not AlreadyExists for "a different request".
func TestClientRetryOfAProposalKeepsItsTool(t *testing.T) {
	r, id := fallbackHarness(t, fetchFallback(&stewardv1.FallbackTrigger{FailureClasses: []stewardv1.FailureClass{transient}}, 10*time.Minute))
	a1 := r.propose(t, id, "p1", "fetch", "x", url)
	onPrimary(t, a1)
	r.run(t, id, a1.ActionId, failed(transient, "503"), nil, time.Now())

	again := r.propose(t, id, "p1", "fetch", "x", url) // engages the fallback first
	if again.ActionId != a1.ActionId {
		t.Fatalf("the repeat of p1 is %s, want %s", again.ActionId, a1.ActionId)
	}
	onPrimary(t, again)

	a2 := r.propose(t, id, "p2", "fetch", "x", url)
	onFallback(t, a2)
	r.clock.Advance(11 * time.Minute)
	again = r.propose(t, id, "p2", "fetch", "x", url) // clears it first
	if again.ActionId != a2.ActionId {
		t.Fatalf("the repeat of p2 is %s, want %s", again.ActionId, a2.ActionId)
	}
	onFallback(t, again)
	onPrimary(t, r.propose(t, id, "p3", "fetch", "x", url))
}

// TestRepeatedDecisionDoesNotReengage: the agent repeating the request of
// an old decision by the fallback model, after the primary decided again
// and cleared it, does not engage the fallback again: that decision is
// stale evidence.
func TestRepeatedDecisionDoesNotReengage(t *testing.T) {
	r := newHarness(t)
	req := validRequest("models")
	req.Contract.Fallbacks = []*stewardv1.Fallback{{Id: "m", Kind: modelKind, Primary: "gpt-a", Fallback: "gpt-b"}}
	tk, _, err := r.ctl.CreateTask(context.Background(), "t", req)
	if err != nil {
		t.Fatal(err)
	}
	id := tk.Contract.TaskId
	r.running(id)
	record := func(name, model string) {
		d := aDecision(name)
		d.Call.ModelId = model
		if _, _, err := r.ctl.RecordDecision(context.Background(), "agent", &stewardv1.RecordDecisionRequest{TaskId: id, Decision: d}); err != nil {
			t.Fatal(err)
		}
	}
	record("d1", "gpt-a")
	record("d2", "gpt-b")
	record("d3", "gpt-a")
	record("d2", "gpt-b") // the repeat
	tk = r.task(t, id)
	if e := tk.FallbackEngagements; len(e) != 1 || task.Engaged(tk, "m") != nil {
		t.Fatalf("engagements = %v; want the one d2 made, cleared by d3", e)
	}
}
