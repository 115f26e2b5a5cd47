package control_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/steward-run/steward/pkg/errs"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/stewardtest"
)

// TestAForkNeverUndoesItsParentsWork: a fork carries its parent's
// succeeded write as state, not as work of its own; failing the fork
// under RECOVERY_MODE_COMPENSATE ends it without compensating that write
// (the fold refuses a compensation naming it: TestForkStateLeavesOutWhatIsOpen).
func TestAForkNeverUndoesItsParentsWork(t *testing.T) {
	r := newHarness(t)
	ctx := context.Background()
	id := r.runningTask(t, "fork-comp", compensate, nil)
	w := r.propose(t, id, "w1", "write", "doc-w1", map[string]any{"text": "w1"})
	r.run(t, id, w.ActionId, succeeded(), []byte(`{"row":1}`), time.Now().Add(-time.Minute))
	f, _, err := r.ctl.ForkTask(ctx, "t", &stewardv1.ForkTaskRequest{TaskId: id, Reason: "again", RequestId: "fk"})
	if err != nil {
		t.Fatal(err)
	}
	forkID := f.Contract.TaskId
	r.running(forkID)
	if _, err := r.ctl.FailTask(ctx, "ops", &stewardv1.FailTaskRequest{TaskId: forkID, Reason: "bad fork", RequestId: "ff"}); err != nil {
		t.Fatal(err)
	}
	tk := r.WaitTask(forkID, func(tk *stewardv1.Task) bool { return tk.Status == stewardv1.TaskStatus_TASK_STATUS_FAILED })
	if c := compensationOf(tk, w.ActionId); c != nil || len(tk.Compensations) != 0 {
		t.Errorf("the fork compensated its parent's write %s: %v, list %v", w.ActionId, c, tk.Compensations)
	}
}

// TestForksOfAnEndedParentShareWhatItLeft: an ended parent's unspent
// budget is lent once, by a reservation it records, not to every fork.
func TestForksOfAnEndedParentShareWhatItLeft(t *testing.T) {
	r := newHarness(t)
	ctx := context.Background()
	id := r.budgetedTask(t, "fork-ended", 1000, 0)
	if _, err := r.ctl.CancelTask(ctx, "agent", &stewardv1.CancelTaskRequest{TaskId: id, Reason: "done"}); err != nil {
		t.Fatal(err)
	}
	var given int64
	var refused error
	for i := range 3 {
		f, _, err := r.ctl.ForkTask(ctx, "agent", &stewardv1.ForkTaskRequest{TaskId: id, Reason: "again", RequestId: fmt.Sprintf("f-%d", i), MaxTokens: 400})
		if err != nil {
			refused = err
			continue
		}
		given += f.Contract.Budget.GetMaxTokens()
	}
	if given != 800 || errs.CodeOf(refused) != errs.Invalid || !strings.Contains(refused.Error(), "200") {
		t.Errorf("three forks of 400 from an ended parent with 1000 left: %d given, the third %v; want 800 and a refusal naming the 200 left", given, refused)
	}
	if used := r.task(t, id).BudgetUsed.GetTokens(); used != 800 {
		t.Errorf("the ended parent records %d tokens reserved, want 800", used)
	}
}

// TestAForkAskedAgainIsTheSameFork: a repeated ForkTask at its default
// point (at_sequence 0: the parent's last event) finds the fork made the
// first time, though its reservation, or anything since, is now the
// parent's last event.
func TestAForkAskedAgainIsTheSameFork(t *testing.T) {
	r := newHarness(t)
	ctx := context.Background()
	id := r.budgetedTask(t, "fork-retry", 1000, 0)
	fork := &stewardv1.ForkTaskRequest{TaskId: id, Reason: "again", RequestId: "f-1", MaxTokens: 100}
	first, created, err := r.ctl.ForkTask(ctx, "agent", fork)
	if err != nil || !created {
		t.Fatalf("fork: %v (created %v)", err, created)
	}
	if _, _, err := r.ctl.AttachContext(ctx, "agent", &stewardv1.AttachContextRequest{TaskId: id, Item: anItem("c1", "openai")}); err != nil {
		t.Fatal(err)
	}
	again, created, err := r.ctl.ForkTask(ctx, "agent", fork)
	if err != nil || created || again.Contract.TaskId != first.Contract.TaskId || again.ForkedFrom.AtSequence != first.ForkedFrom.AtSequence {
		t.Errorf("the same fork again: created %v, %v", created, err)
	}
	if used := r.task(t, id).BudgetUsed.GetTokens(); used != 100 {
		t.Errorf("the parent has %d tokens reserved after the fork was asked twice, want 100", used)
	}
}

// TestAForkTooLargeReservesNothing: a fork whose starting state is more
// than the log takes in one event is refused before its budget is
// reserved from the parent.
func TestAForkTooLargeReservesNothing(t *testing.T) {
	r := newHarness(t)
	ctx := context.Background()
	id := r.budgetedTask(t, "fork-large", 1_000_000, 1000)
	maxPayload := int(r.Bus.Conn.MaxPayload())
	for i, size := 0, 0; size <= maxPayload; i++ {
		d := aDecision(fmt.Sprintf("d-%d", i))
		d.Call.TokensIn, d.Call.TokensOut, d.Call.CostMicros = 0, 0, 0
		d.Rationale = strings.Repeat("r", 4000)
		for j := range 5 {
			d.Evidence = append(d.Evidence, fmt.Sprintf("https://e.example/%d/%s", j, strings.Repeat("x", 1900)))
		}
		if _, _, err := r.ctl.RecordDecision(ctx, "agent", &stewardv1.RecordDecisionRequest{TaskId: id, Decision: d}); err != nil {
			t.Fatal(i, err)
		}
		size += proto.Size(d)
	}
	_, _, err := r.ctl.ForkTask(ctx, "agent", &stewardv1.ForkTaskRequest{TaskId: id, Reason: "x", RequestId: "f-big", MaxTokens: 500_000})
	if errs.CodeOf(err) != errs.TooLarge {
		t.Fatalf("a fork larger than an event may be: %v, want too large", err)
	}
	if used := r.task(t, id).BudgetUsed.GetTokens(); used != 0 {
		t.Errorf("the refused fork left %d tokens reserved on the parent", used)
	}
}

// budgetedTask creates and starts a task whose budget is tokens, and whose
// action cap, where maxActions is not zero, is maxActions.
func (r *harness) budgetedTask(t *testing.T, requestID string, tokens int64, maxActions uint32) string {
	t.Helper()
	req := validRequest(requestID)
	req.Contract.Budget = &stewardv1.Budget{MaxTokens: tokens}
	if maxActions != 0 {
		req.Contract.Limits = &stewardv1.TaskLimits{MaxActions: maxActions}
	}
	p, _, err := r.ctl.CreateTask(context.Background(), "agent", req)
	if err != nil {
		t.Fatal(err)
	}
	r.running(p.Contract.TaskId)
	return p.Contract.TaskId
}

// TestAnEndedForkLendsNothingAgain: G (1000 tokens) lends 400 to fork
// F1; F1 ends spending nothing and its release gives the 400 back to G.
// What F1 left is G's again, so a fork of the ended F1 that would reserve
// from it is refused, naming G — else the same 400 would be lent twice,
// and paid back to G twice (found by review).
func TestAnEndedForkLendsNothingAgain(t *testing.T) {
	r := newHarness(t)
	ctx := context.Background()
	g := r.budgetedTask(t, "g", 1000, 0)
	f1, _, err := r.ctl.ForkTask(ctx, "agent", &stewardv1.ForkTaskRequest{TaskId: g, Reason: "a", RequestId: "f1", MaxTokens: 400})
	if err != nil {
		t.Fatal(err)
	}
	f1ID := f1.Contract.TaskId
	if _, err := r.ctl.CancelTask(ctx, "agent", &stewardv1.CancelTaskRequest{TaskId: f1ID, Reason: "done"}); err != nil {
		t.Fatal(err)
	}
	used := func(id string) int64 { return r.task(t, id).BudgetUsed.GetTokens() }
	stewardtest.Eventually(t, 10*time.Second, func() (bool, string) { return used(g) == 0, "F1's release not back on G" })
	// G spends 500 of its own.
	if _, err := r.ctl.ReportUsage(ctx, "agent", &stewardv1.ReportUsageRequest{TaskId: g, Tokens: 500, RequestId: "u1"}); err != nil {
		t.Fatal(err)
	}
	_, _, err = r.ctl.ForkTask(ctx, "agent", &stewardv1.ForkTaskRequest{TaskId: f1ID, Reason: "b", RequestId: "f2", MaxTokens: 400})
	if errs.CodeOf(err) != errs.FailedPrecondition || !strings.Contains(err.Error(), g) {
		t.Fatalf("a fork of an ended fork reserving what went back to %s: %v, want a refusal naming it", g, err)
	}
	if u := used(g); u != 500 {
		t.Errorf("G records %d tokens used, want its own 500", u)
	}
}

// TestAForkMayDecideAgain: a fork exists to decide again; its parent's
// decisions are carried as state and do not count against the fork's
// loop cap, so a fork of a parent at its cap may decide (found by review).
func TestAForkMayDecideAgain(t *testing.T) {
	r := newHarness(t)
	ctx := context.Background()
	id := r.budgetedTask(t, "decided", 1_000_000, 2)
	for _, d := range []string{"d-1", "d-2"} {
		if _, _, err := r.ctl.RecordDecision(ctx, "agent", &stewardv1.RecordDecisionRequest{TaskId: id, Decision: aDecision(d)}); err != nil {
			t.Fatal(err)
		}
	}
	f, _, err := r.ctl.ForkTask(ctx, "agent", &stewardv1.ForkTaskRequest{TaskId: id, Reason: "recompute with gpt-b", RequestId: "fk", MaxTokens: 1000})
	if err != nil {
		t.Fatal(err)
	}
	r.running(f.Contract.TaskId)
	d := aDecision("d-fork")
	d.Call.ModelId = "gpt-b"
	if _, _, err := r.ctl.RecordDecision(ctx, "agent", &stewardv1.RecordDecisionRequest{TaskId: f.Contract.TaskId, Decision: d}); err != nil {
		t.Errorf("the fork's first decision of its own: %v", err)
	}
	got := r.task(t, f.Contract.TaskId)
	if len(got.Decisions) != 3 || !got.Decisions[0].Carried || got.Decisions[2].Carried {
		t.Errorf("the fork's decisions: %v; want the parent's two carried, then its own", got.Decisions)
	}
}
