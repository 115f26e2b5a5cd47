package e2e_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/steward-run/steward/pkg/action"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/task"
)

// propose proposes a call of tool, with the params each tool's schema
// wants; it returns the error, so that goroutines may propose too.
func (c *cluster) propose(taskID, proposalID, tool string) (*stewardv1.Action, error) {
	params, err := structpb.NewStruct(map[string]any{"q": proposalID, "amount": 1})
	if err != nil {
		return nil, err
	}
	resp, err := c.agent.tasks.ProposeAction(context.Background(), connect.NewRequest(&stewardv1.ProposeActionRequest{
		TaskId: taskID, ProposalId: proposalID, Tool: tool, Params: params, Rationale: argued,
	}))
	if err != nil {
		return nil, fmt.Errorf("propose %s: %w", proposalID, err)
	}
	return resp.Msg.Action, nil
}

func (c *cluster) mustPropose(t *testing.T, taskID, proposalID, tool string) *stewardv1.Action {
	t.Helper()
	a, err := c.propose(taskID, proposalID, tool)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// approve approves the action a, awaiting approval.
func (c *cluster) approve(t *testing.T, a *stewardv1.Action) {
	t.Helper()
	if _, err := c.approver.governance.DecideApproval(context.Background(), connect.NewRequest(&stewardv1.DecideApprovalRequest{
		ApprovalId: a.Approval.ApprovalId, ActionHash: a.ActionHash, Decision: stewardv1.ApprovalDecision_APPROVAL_DECISION_APPROVE,
	})); err != nil {
		t.Fatal(err)
	}
}

// waitAction waits on the log until the action has status want.
func (c *cluster) waitAction(taskID, actionID string, want stewardv1.ActionStatus) (*stewardv1.Task, *stewardv1.Action) {
	tk := c.env.WaitTask(taskID, func(t *stewardv1.Task) bool { return task.FindAction(t, actionID).GetStatus() == want })
	return tk, task.FindAction(tk, actionID)
}

// load folds the task from the log as it is now.
func (c *cluster) load(t *testing.T, taskID string) *stewardv1.Task {
	t.Helper()
	tk, _, err := c.env.Tasks.Load(context.Background(), taskID)
	if err != nil {
		t.Fatal(err)
	}
	return tk
}

func countStatus(tk *stewardv1.Task, s stewardv1.ActionStatus) int {
	n := 0
	for _, a := range tk.Actions {
		if a.Status == s {
			n++
		}
	}
	return n
}

// TestPermitIsClaimedOnce proposes many actions at once to a task served
// by several `steward serve --plane=execution` workers and checks that the
// tool did each action's work exactly once, on one call, under one claim.
func TestPermitIsClaimedOnce(t *testing.T) {
	const workers, actions = 5, 20
	c := startCluster(t, workers)
	taskID := governedTask(t, c.agent, "race")
	var wg sync.WaitGroup
	for i := range actions {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := c.propose(taskID, fmt.Sprint("p", i), "search"); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	final := c.env.WaitTask(taskID, func(t *stewardv1.Task) bool {
		return countStatus(t, stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED) == actions
	})
	keys := map[string]bool{}
	for _, w := range c.tool.Worked() {
		keys[w.Key] = true
	}
	if worked, calls := len(c.tool.Worked()), c.tool.Calls(); len(keys) != actions || worked != actions || calls != actions {
		t.Fatalf("%d workers, %d actions: the tool did %d executions of %d keys over %d calls; want %d of each",
			workers, actions, worked, len(keys), calls, actions)
	}
	claimedBy := map[string]int{}
	for _, a := range final.Actions {
		if n := c.tool.Executions(a.OpKey); n != 1 {
			t.Errorf("action %s was executed %d times", a.ActionId, n)
		}
		claimedBy[a.ClaimedBy]++
	}
	history, err := c.env.Log.Read(context.Background(), taskID)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range final.Actions {
		// The claim: an ActionClaimed, or the first dispatch carrying it.
		if by := claimsOf(history, a.ActionId); len(by) != 1 || by[0] != a.ClaimedBy {
			t.Errorf("action %s was claimed by %v and is held by %q; want one claim, by its holder", a.ActionId, by, a.ClaimedBy)
		}
	}
	t.Logf("claims per worker: %v", claimedBy)
}

// TestRedeliveryAppendsNothingTwice runs governed actions to the end, then
// makes every plane see every event again — each process is stopped, each
// durable consumer deleted and the processes started again, so JetStream
// redelivers the whole log — and checks that no event was appended and no
// tool call made.
func TestRedeliveryAppendsNothingTwice(t *testing.T) {
	c := startCluster(t, 2)
	taskID := governedTask(t, c.agent, "redeliver")
	c.mustPropose(t, taskID, "r1", "search")
	c.mustPropose(t, taskID, "r2", "search")
	w := c.mustPropose(t, taskID, "w1", "wire")
	_, a := c.waitAction(taskID, w.ActionId, stewardv1.ActionStatus_ACTION_STATUS_AWAITING_APPROVAL)
	c.approve(t, a)
	c.env.WaitTask(taskID, func(t *stewardv1.Task) bool {
		return countStatus(t, stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED) == 3
	})
	consumers := c.consumers(t)
	c.env.Settle(consumers...)
	before := c.load(t, taskID)
	callsBefore := c.tool.Calls()

	// Redeliver everything to every plane.
	for _, name := range c.order {
		c.stop(t, name)
	}
	for _, name := range consumers {
		if err := c.env.JS.DeleteConsumer(context.Background(), c.env.Log.Config().Stream, name); err != nil {
			t.Fatalf("delete consumer %s: %v", name, err)
		}
	}
	for _, name := range c.order {
		c.start(t, name)
	}
	// A fresh action after the restart; once it has run and every plane
	// has handled every event, redelivered or new, whatever the
	// redelivery appended is on the log.
	marker := c.mustPropose(t, taskID, "after", "search")
	c.waitAction(taskID, marker.ActionId, stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED)
	c.env.Settle(c.consumers(t)...)
	after := c.load(t, taskID)
	// The marker's own events are the only new ones: proposed, permitted
	// (carrying its snapshot), dispatched (carrying the claim), outcome.
	if got, want := after.EventCount, before.EventCount+4; got != want {
		t.Fatalf("after redelivery the task has %d events, want %d", got, want)
	}
	if calls := c.tool.Calls(); calls != callsBefore+1 {
		t.Fatalf("after redelivery the tool got %d calls, want %d", calls, callsBefore+1)
	}
}

// TestActionThatCannotBeEvaluatedIsDenied changes an action's stored
// request while the governance process is down: when it comes back the
// action is denied with the reason, not left proposed for ever. The
// request is made too large to travel inline, so that it is stored.
func TestActionThatCannotBeEvaluatedIsDenied(t *testing.T) {
	c := startCluster(t, 1)
	taskID := governedTask(t, c.agent, "lost-request")
	c.stop(t, "governance")
	params, err := structpb.NewStruct(map[string]any{"q": strings.Repeat("q", action.MaxInlineRequest)})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := c.agent.tasks.ProposeAction(context.Background(), connect.NewRequest(&stewardv1.ProposeActionRequest{
		TaskId: taskID, ProposalId: "lost", Tool: "search", Params: params,
	}))
	if err != nil {
		t.Fatal(err)
	}
	a := resp.Msg.Action
	if a.RequestRef == "" || len(a.Request) != 0 {
		t.Fatalf("ref %q, %d inline bytes; want the request stored", a.RequestRef, len(a.Request))
	}
	overwriteBlob(t, c.env.JS, a.RequestRef, []byte(`{"q":"something else"}`))
	c.start(t, "governance")
	_, denied := c.waitAction(taskID, a.ActionId, stewardv1.ActionStatus_ACTION_STATUS_DENIED)
	if got := denied.Outcome.GetReason(); !strings.Contains(got, "cannot be evaluated") {
		t.Fatalf("deny reason: %q", got)
	}
	if calls := c.tool.Calls(); calls != 0 {
		t.Fatalf("the tool was called %d times", calls)
	}
}

// TestPermitWaitsForAPausedTask approves an action while its task is
// paused: the permit is issued, and the workers handle it, but nothing
// runs until the task resumes, and then it runs once.
func TestPermitWaitsForAPausedTask(t *testing.T) {
	c := startCluster(t, 2)
	ctx := context.Background()
	taskID := governedTask(t, c.agent, "paused-permit")
	w := c.mustPropose(t, taskID, "w1", "wire")
	_, a := c.waitAction(taskID, w.ActionId, stewardv1.ActionStatus_ACTION_STATUS_AWAITING_APPROVAL)
	if _, err := c.agent.tasks.PauseTask(ctx, connect.NewRequest(&stewardv1.PauseTaskRequest{TaskId: taskID, Reason: "hold on"})); err != nil {
		t.Fatal(err)
	}
	c.approve(t, a)
	paused, _ := c.waitAction(taskID, w.ActionId, stewardv1.ActionStatus_ACTION_STATUS_PERMITTED)
	if paused.Status != stewardv1.TaskStatus_TASK_STATUS_PAUSED || paused.PausedFrom != stewardv1.TaskStatus_TASK_STATUS_RUNNING {
		t.Fatalf("task is %v (resumes to %v), want paused, resuming to running", paused.Status, paused.PausedFrom)
	}
	// Every worker has had the permit, and the pause, and let it be.
	c.env.Settle(c.consumers(t)...)
	if n := c.tool.CallsFor(w.OpKey); n != 0 {
		t.Fatalf("the tool ran %d times while the task was paused", n)
	}
	if _, err := c.agent.tasks.ResumeTask(ctx, connect.NewRequest(&stewardv1.ResumeTaskRequest{TaskId: taskID})); err != nil {
		t.Fatal(err)
	}
	c.waitAction(taskID, w.ActionId, stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED)
	if n := c.tool.CallsFor(w.OpKey); n != 1 {
		t.Fatalf("after the resume the tool ran %d times, want 1", n)
	}
}
