package steward

import (
	"context"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// The calls of the people around a task — its owner, an approver, an
// operator, a budget owner — rather than its agent's. Each command fills
// in its request id, when the caller left it empty, once before the
// first attempt, as the agent's commands do: a pause sent again after a
// lost answer finds the first and pauses nothing more.

// taskCommand sends req, a command that answers with the task, on a copy
// whose request_id is filled in when empty — once, so that every retry
// sends the same.
func taskCommand[Req any, PReq interface {
	*Req
	proto.Message
	GetRequestId() string
}, Res any, PRes interface {
	*Res
	GetTask() *stewardv1.Task
}](ctx context.Context, c *Client, send func(context.Context, *connect.Request[Req]) (*connect.Response[Res], error), req PReq) (*stewardv1.Task, error) {
	req = proto.CloneOf(req)
	m := req.ProtoReflect()
	m.Set(m.Descriptor().Fields().ByName("request_id"), protoreflect.ValueOfString(c.orNew(req.GetRequestId())))
	resp, err := call(ctx, c.retry, send, (*Req)(req))
	return PRes(resp).GetTask(), err
}

// PauseTask pauses a task under req.RequestId (chosen when empty).
func (c *Client) PauseTask(ctx context.Context, req *stewardv1.PauseTaskRequest) (*stewardv1.Task, error) {
	return taskCommand(ctx, c, c.tasks.PauseTask, req)
}

// ResumeTask resumes a paused, suspended or waiting task under
// req.RequestId (chosen when empty).
func (c *Client) ResumeTask(ctx context.Context, req *stewardv1.ResumeTaskRequest) (*stewardv1.Task, error) {
	return taskCommand(ctx, c, c.tasks.ResumeTask, req)
}

// CancelTask cancels a task under req.RequestId (chosen when empty).
func (c *Client) CancelTask(ctx context.Context, req *stewardv1.CancelTaskRequest) (*stewardv1.Task, error) {
	return taskCommand(ctx, c, c.tasks.CancelTask, req)
}

// FailTask ends a task as failed under req.RequestId (chosen when empty).
func (c *Client) FailTask(ctx context.Context, req *stewardv1.FailTaskRequest) (*stewardv1.Task, error) {
	return taskCommand(ctx, c, c.tasks.FailTask, req)
}

// ProvideInput answers a task waiting for input under req.RequestId
// (chosen when empty).
func (c *Client) ProvideInput(ctx context.Context, req *stewardv1.ProvideInputRequest) (*stewardv1.Task, error) {
	return taskCommand(ctx, c, c.tasks.ProvideInput, req)
}

// RaiseBudget raises a task's budget under req.RequestId (chosen when
// empty).
func (c *Client) RaiseBudget(ctx context.Context, req *stewardv1.RaiseBudgetRequest) (*stewardv1.Task, error) {
	return taskCommand(ctx, c, c.tasks.RaiseBudget, req)
}

// ListTasks lists a page of the caller's tenant's tasks, as summaries.
func (c *Client) ListTasks(ctx context.Context, req *stewardv1.ListTasksRequest) (*stewardv1.ListTasksResponse, error) {
	return call(ctx, c.retry, c.query.ListTasks, req)
}

// ListApprovals lists a page of approvals, in the order requested.
func (c *Client) ListApprovals(ctx context.Context, req *stewardv1.ListApprovalsRequest) (*stewardv1.ListApprovalsResponse, error) {
	return call(ctx, c.retry, c.governance.ListApprovals, req)
}

// GetApproval reads one approval: what the action will do, and its hash.
func (c *Client) GetApproval(ctx context.Context, approvalID string) (*stewardv1.Approval, error) {
	resp, err := call(ctx, c.retry, c.governance.GetApproval, &stewardv1.GetApprovalRequest{ApprovalId: approvalID})
	return resp.GetApproval(), err
}

// DecideApproval records the caller's vote on an approval, bound to the
// action hash (or plan hash) the caller saw: a vote for any other hash is
// refused. A vote carries no id of its own — Steward knows it by its
// voter — so a retry after a lost answer is refused as a vote already
// cast (or an approval already decided); DecideApproval then reads the
// approval and answers with it if it holds a vote with this decision,
// which may be the lost attempt's. Compare the votes' principals with
// your own to know. An amendment, or an answer that a person executes the
// action, repeated as it was decided by the same caller, is answered by
// Steward itself with the approval (an amendment's amended_action_id
// names the one action it proposed).
func (c *Client) DecideApproval(ctx context.Context, req *stewardv1.DecideApprovalRequest) (*stewardv1.Approval, error) {
	sent := 0
	send := func(ctx context.Context, r *connect.Request[stewardv1.DecideApprovalRequest]) (*connect.Response[stewardv1.DecideApprovalResponse], error) {
		sent++
		return c.governance.DecideApproval(ctx, r)
	}
	resp, err := call(ctx, c.retry, send, req)
	if err == nil || sent < 2 {
		return resp.GetApproval(), err
	}
	if code := CodeOf(err); code != connect.CodeAlreadyExists && code != connect.CodeFailedPrecondition {
		return nil, err
	}
	ap, rerr := c.GetApproval(ctx, req.ApprovalId)
	if rerr != nil || ap.Withdrawn {
		return nil, err // a withdrawn approval took no vote of anyone's since
	}
	for _, v := range ap.Votes {
		if v.Decision == req.Decision {
			return ap, nil
		}
	}
	return nil, err
}

// SettleAction records the truth about an action whose outcome is
// unknown. Steward answers a repeat of the same settlement with the
// action as settled, so it is sent again while unanswered.
func (c *Client) SettleAction(ctx context.Context, req *stewardv1.SettleActionRequest) (*stewardv1.Action, error) {
	resp, err := call(ctx, c.retry, c.actions.SettleAction, req)
	return resp.GetAction(), err
}

// AcceptTask accepts a produced task's result, as its acceptance owner,
// under req.RequestId (chosen when empty).
func (c *Client) AcceptTask(ctx context.Context, req *stewardv1.AcceptTaskRequest) (*stewardv1.Task, error) {
	return taskCommand(ctx, c, c.tasks.AcceptTask, req)
}

// ReturnTask returns a produced task's result to its agent with what must
// change, under req.RequestId (chosen when empty).
func (c *Client) ReturnTask(ctx context.Context, req *stewardv1.ReturnTaskRequest) (*stewardv1.Task, error) {
	return taskCommand(ctx, c, c.tasks.ReturnTask, req)
}
