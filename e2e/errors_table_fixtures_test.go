package e2e_test

import (
	"context"
	"testing"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// The situations below are made once, the first time a row asks for one,
// and shared by the rows that need them. Each is named for what holds of
// it; no row changes what another row relies on.

// actionRef names one action of one task.
type actionRef struct{ task, action string }

// governed is a running task allowing search and wire; rows send it only
// requests that are refused.
func (e *harness) governed(t *testing.T) string {
	return fixture(e, "governed", func() string { return e.create(t, "table-governed", governed()) })
}

// cancelled is a task its creator cancelled.
func (e *harness) cancelled(t *testing.T) string {
	return fixture(e, "cancelled", func() string {
		id := e.create(t, "table-cancelled", contract())
		if _, err := e.agent.tasks.CancelTask(context.Background(), connect.NewRequest(&stewardv1.CancelTaskRequest{TaskId: id, Reason: "not needed"})); err != nil {
			t.Fatal(err)
		}
		waitStatus(t, e.agent.clients, id, stewardv1.TaskStatus_TASK_STATUS_CANCELLED)
		return id
	})
}

// paused is a task its creator paused.
func (e *harness) paused(t *testing.T) string {
	return fixture(e, "paused", func() string {
		id := e.create(t, "table-paused", contract())
		if _, err := e.agent.tasks.PauseTask(context.Background(), connect.NewRequest(&stewardv1.PauseTaskRequest{TaskId: id, Reason: "hold on"})); err != nil {
			t.Fatal(err)
		}
		waitStatus(t, e.agent.clients, id, stewardv1.TaskStatus_TASK_STATUS_PAUSED)
		return id
	})
}

// pendingApproval is a wire waiting for its approval; nobody decides it.
func (e *harness) pendingApproval(t *testing.T) *stewardv1.Approval {
	return fixture(e, "pending approval", func() *stewardv1.Approval {
		return e.approval(t, e.create(t, "table-approvals", governed()), "wire-pending", 120)
	})
}

// approval proposes a wire of amount on taskID and returns the approval it
// waits for.
func (e *harness) approval(t *testing.T, taskID, proposalID string, amount int) *stewardv1.Approval {
	t.Helper()
	a := propose(t, e.agent, taskID, proposalID, "wire", map[string]any{"amount": amount})
	waitAction(t, e.agent.clients, taskID, a.ActionId, stewardv1.ActionStatus_ACTION_STATUS_AWAITING_APPROVAL)
	list, err := e.approver.governance.ListApprovals(context.Background(), connect.NewRequest(&stewardv1.ListApprovalsRequest{TaskId: taskID, PendingOnly: true}))
	if err != nil {
		t.Fatal(err)
	}
	for _, ap := range list.Msg.Approvals {
		if ap.ActionId == a.ActionId {
			return ap
		}
	}
	t.Fatalf("no pending approval for action %s: %v", a.ActionId, list.Msg.Approvals)
	return nil
}

// unknownAction is a call to the slow tool, which never answers in time:
// its outcome is unknown until someone settles it.
func (e *harness) unknownAction(t *testing.T, requestID string) actionRef {
	t.Helper()
	k := contract()
	k.AllowedTools = []string{"slow"}
	return e.unknownActionOn(t, e.create(t, requestID, k))
}

// unknownActionOn is unknownAction on task id, which allows the slow tool.
func (e *harness) unknownActionOn(t *testing.T, id string) actionRef {
	t.Helper()
	params, _ := structpb.NewStruct(nil)
	resp, err := e.agent.tasks.ProposeAction(context.Background(), connect.NewRequest(&stewardv1.ProposeActionRequest{
		TaskId: id, ProposalId: "slow-1", Tool: "slow", Target: "card:1", Params: params,
	}))
	if err != nil {
		t.Fatal(err)
	}
	waitAction(t, e.agent.clients, id, resp.Msg.Action.ActionId, stewardv1.ActionStatus_ACTION_STATUS_UNKNOWN)
	return actionRef{task: id, action: resp.Msg.Action.ActionId}
}

// succeededAction is a search that ran.
func (e *harness) succeededAction(t *testing.T) actionRef {
	return fixture(e, "succeeded action", func() actionRef {
		id := e.create(t, "table-searched", contract())
		a := propose(t, e.agent, id, "search-1", "search", map[string]any{"q": "incidents"})
		waitAction(t, e.agent.clients, id, a.ActionId, stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED)
		return actionRef{task: id, action: a.ActionId}
	})
}

// spent is a task suspended because it used all its 100 tokens.
func (e *harness) spent(t *testing.T) string {
	return fixture(e, "spent", func() string {
		k := contract()
		k.Budget = &stewardv1.Budget{MaxTokens: 100}
		id := e.create(t, "table-spent", k)
		if _, err := e.agent.tasks.ReportUsage(context.Background(), connect.NewRequest(&stewardv1.ReportUsageRequest{
			TaskId: id, Tokens: 100, Model: "m", RequestId: "all-of-it"})); err != nil {
			t.Fatal(err)
		}
		waitStatus(t, e.agent.clients, id, stewardv1.TaskStatus_TASK_STATUS_SUSPENDED)
		return id
	})
}

// produced is a task the agent marked produced, waiting for its acceptance
// owner, user:rev, under separation of duties.
func (e *harness) produced(t *testing.T) string {
	return fixture(e, "produced", func() string {
		k := contract()
		k.AcceptanceOwnerRef, k.SeparationOfDuties = "user:rev", true
		id := e.create(t, "table-produced", k)
		resp, err := e.agent.tasks.MarkProduced(context.Background(), connect.NewRequest(&stewardv1.MarkProducedRequest{TaskId: id}))
		if err != nil {
			t.Fatal(err)
		}
		if s := resp.Msg.Task.Status; s != stewardv1.TaskStatus_TASK_STATUS_PRODUCED {
			t.Fatalf("produced task is %v (%s)", s, resp.Msg.Task.StatusReason)
		}
		return id
	})
}

// delegated is a running parent and the sub-task it delegated 10,000
// tokens to.
func (e *harness) delegated(t *testing.T) (parent, child string) {
	ids := fixture(e, "delegated", func() [2]string {
		parent := e.create(t, "table-parent", governed())
		return [2]string{parent, e.delegate(t, parent, "table-child")}
	})
	return ids[0], ids[1]
}

// revoked is a task whose credential an operator revoked, and the sub-task
// it delegated before.
func (e *harness) revoked(t *testing.T) (parent, child string) {
	ids := fixture(e, "revoked", func() [2]string {
		parent := e.create(t, "table-revoked", governed())
		child := e.delegate(t, parent, "table-revoked-child")
		if _, err := e.operator.governance.RevokeCredential(context.Background(), connect.NewRequest(&stewardv1.RevokeCredentialRequest{
			TaskId: parent, Reason: "agent key leaked"})); err != nil {
			t.Fatal(err)
		}
		return [2]string{parent, child}
	})
	return ids[0], ids[1]
}

// delegate delegates a search-only sub-task with 10,000 tokens from parent
// and waits until it runs with its credential.
func (e *harness) delegate(t *testing.T, parent, requestID string) string {
	t.Helper()
	sub := contract()
	sub.Budget = &stewardv1.Budget{MaxTokens: 10_000}
	resp, err := e.agent.tasks.DelegateTask(context.Background(), connect.NewRequest(&stewardv1.DelegateTaskRequest{
		ParentTaskId: parent, Contract: sub, DelegateRef: "agent:summariser", RequestId: requestID}))
	if err != nil {
		t.Fatal(err)
	}
	id := resp.Msg.Task.Contract.TaskId
	waitStarted(t, e.agent.clients, id)
	return id
}

// expired is a running task whose credential has expired: a sub-task
// with no deadline of its own, whose credential ended with its parent's
// deadline (pastDeadline).
func (e *harness) expired(t *testing.T) string {
	_, child := e.pastDeadline(t)
	return child
}

// pastDeadline is a task whose deadline passed a moment after it started,
// and a sub-task it delegated before, with no deadline of its own. The
// parent is suspended at its deadline (docs/deadline.md), so it takes no
// proposals; the sub-task runs on, under a credential that ended with the
// parent's.
func (e *harness) pastDeadline(t *testing.T) (parent, child string) {
	ids := fixture(e, "past-deadline", func() [2]string {
		k := contract()
		k.AccountableOwnerRef = "user:owner"
		deadline := time.Now().Add(3 * time.Second)
		k.Deadline = timestamppb.New(deadline)
		parent := e.create(t, "table-expired", k)
		child := e.delegate(t, parent, "table-expired-child")
		waitPast(t, deadline) // the one thing to wait for is the clock
		return [2]string{parent, child}
	})
	return ids[0], ids[1]
}
