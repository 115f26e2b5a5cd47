package control_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/steward-run/steward/pkg/errs"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/task"
)

// TestForkStartsFromTheParentAtItsPoint: a task with a finished action, an
// action waiting for approval, a decision and its context is forked at
// its last event. The fork names its parent and the point (sequence and
// hash); its folded state there is the parent's, but for what the fork
// does not carry over: the open action is withdrawn, with no approval or
// permit, and the budget is the fork's own, reserved on the parent and
// given back when the fork ends. The fork runs on its own; the parent's
// history is unchanged but for the reservation. A repeat answers the same fork; a point that is not the
// parent's is refused, naming the field.
func TestForkStartsFromTheParentAtItsPoint(t *testing.T) {
	r := newHarness(t)
	ctx := context.Background()
	req := validRequest("fork-parent")
	req.Contract.AllowedTools = []string{"search", "write", "undo"}
	req.Contract.Budget = &stewardv1.Budget{MaxTokens: 1000}
	parentTask, _, err := r.ctl.CreateTask(ctx, "agent", req)
	if err != nil {
		t.Fatal(err)
	}
	id := parentTask.Contract.TaskId
	r.running(id)
	done := r.propose(t, id, "p-done", "search", "index", map[string]any{"q": "a"})
	r.run(t, id, done.ActionId, succeeded(), []byte(`{"hits":1}`), r.clock.Now())
	open := r.propose(t, id, "p-open", "write", "doc", map[string]any{"text": "x"})
	r.Append(id,
		&stewardv1.PolicyEvaluated{ActionId: open.ActionId, Snapshot: &stewardv1.PolicySnapshot{SnapshotId: "s-open", Decision: stewardv1.PolicyDecision_POLICY_DECISION_REQUIRE_APPROVAL}},
		&stewardv1.ApprovalRequested{Approval: &stewardv1.Approval{ApprovalId: "ap-open", ActionId: open.ActionId, ActionHash: open.ActionHash}})
	item := anItem("c1", "openai")
	item.ExpiresAt = timestamppb.New(r.clock.Now().Add(time.Hour))
	if _, _, err := r.ctl.AttachContext(ctx, "agent", &stewardv1.AttachContextRequest{TaskId: id, Item: item}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := r.ctl.RecordDecision(ctx, "agent", &stewardv1.RecordDecisionRequest{TaskId: id, Decision: aDecision("d1", "c1")}); err != nil {
		t.Fatal(err)
	}
	recs, err := r.Log.Read(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	at := recs[len(recs)-1]
	parentAt, err := task.Fold(recs)
	if err != nil {
		t.Fatal(err)
	}

	fork := &stewardv1.ForkTaskRequest{TaskId: id, AtSequence: at.Sequence, Reason: "try another model", RequestId: "fork-1", MaxTokens: 300}
	forked, created, err := r.ctl.ForkTask(ctx, "agent", fork)
	if err != nil || !created {
		t.Fatalf("ForkTask: %v (created %v)", err, created)
	}
	if o := forked.ForkedFrom; o.GetParentTaskId() != id || o.AtSequence != at.Sequence || !proto.Equal(&stewardv1.ForkOrigin{AtHash: o.AtHash}, &stewardv1.ForkOrigin{AtHash: at.Event.Hash}) || o.State != nil {
		t.Fatalf("forked_from %v, want %s at %d", o, id, at.Sequence)
	}
	// The listed differences, and nothing else.
	for i, a := range forked.Actions {
		want := proto.CloneOf(parentAt.Actions[i])
		if want.ActionId == open.ActionId {
			if want.Approval == nil || a.Status != stewardv1.ActionStatus_ACTION_STATUS_WITHDRAWN || a.Approval != nil || a.Permit != nil {
				t.Fatalf("the open action in the fork: %s, approval %v, permit %v", a.Status, a.Approval, a.Permit)
			}
			want.Status, want.Approval = stewardv1.ActionStatus_ACTION_STATUS_WITHDRAWN, nil
		}
		if !a.Carried {
			t.Errorf("action %d in the fork is not marked carried", i)
		}
		want.Carried = true
		if !proto.Equal(a, want) {
			t.Errorf("action %d in the fork:\n%v\nat the fork in the parent:\n%v", i, a, want)
		}
	}
	carried := make([]*stewardv1.Decision, len(parentAt.Decisions))
	for i, d := range parentAt.Decisions {
		carried[i] = proto.CloneOf(d)
		carried[i].Carried = true
	}
	if len(forked.Actions) != 2 || !equalAll(forked.Decisions, carried) || !equalAll(forked.ContextItems, parentAt.ContextItems) {
		t.Errorf("the fork carries %d actions, decisions %v, context %v", len(forked.Actions), forked.Decisions, forked.ContextItems)
	}
	c, pc := proto.CloneOf(forked.Contract), proto.CloneOf(parentAt.Contract)
	if c.Budget.GetMaxTokens() != 300 || c.TaskId == id {
		t.Errorf("the fork's contract: %v", c)
	}
	c.TaskId, c.Budget, pc.TaskId, pc.Budget, pc.CredentialRef = "", nil, "", nil, ""
	if !proto.Equal(c, pc) {
		t.Errorf("the fork's contract is not the parent's:\n%v\n%v", c, pc)
	}
	if forked.BudgetUsed.GetTokens() != 0 || forked.Plan != nil || forked.Credential != nil {
		t.Errorf("the fork's own: used %v, plan %v, credential %v", forked.BudgetUsed, forked.Plan, forked.Credential)
	}

	// The parent: the reservation, once, and nothing else.
	again, created, err := r.ctl.ForkTask(ctx, "agent", fork)
	if err != nil || created || again.Contract.TaskId != forked.Contract.TaskId {
		t.Fatalf("ForkTask again: %v (created %v)", err, created)
	}
	parentNow := r.task(t, id)
	if parentNow.BudgetUsed.GetTokens() != parentAt.BudgetUsed.GetTokens()+300 || parentNow.EventCount != parentAt.EventCount+1 {
		t.Errorf("the parent after the fork: %d tokens used, %d events (was %d)", parentNow.BudgetUsed.GetTokens(), parentNow.EventCount, parentAt.EventCount)
	}
	// The fork runs on its own.
	forkID := forked.Contract.TaskId
	r.running(forkID)
	if a := r.propose(t, forkID, "p-new", "search", "index", map[string]any{"q": "b"}); a.Status != stewardv1.ActionStatus_ACTION_STATUS_PROPOSED {
		t.Errorf("a proposal in the fork: %s", a.Status)
	}

	// Ended, the fork gives back what it did not spend.
	if _, err := r.ctl.CancelTask(ctx, "agent", &stewardv1.CancelTaskRequest{TaskId: forkID, Reason: "enough"}); err != nil {
		t.Fatal(err)
	}
	r.WaitTask(id, func(tk *stewardv1.Task) bool { return tk.BudgetUsed.GetTokens() == parentAt.BudgetUsed.GetTokens() })

	var e *errs.Error
	bad := proto.CloneOf(fork)
	bad.RequestId, bad.AtSequence = "fork-2", at.Sequence+1000
	if _, _, err := r.ctl.ForkTask(ctx, "agent", bad); !errors.As(err, &e) || e.Code != errs.Invalid || e.Field != "at_sequence" {
		t.Errorf("a point that is not the parent's: %v", err)
	}
	greedy := proto.CloneOf(fork)
	greedy.RequestId, greedy.MaxTokens = "fork-3", 900
	if _, _, err := r.ctl.ForkTask(ctx, "agent", greedy); err == nil {
		t.Errorf("a fork reserving more than the parent has left was made")
	}
}

func equalAll[M proto.Message](a, b []M) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !proto.Equal(a[i], b[i]) {
			return false
		}
	}
	return true
}
