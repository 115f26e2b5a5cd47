package steward

import (
	"context"

	"google.golang.org/protobuf/proto"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// ProposeAndWait proposes an action and waits until Steward no longer
// moves it on by itself: it has ended (succeeded, failed, denied,
// rejected, withdrawn), or waits for a person (an approval, an unknown
// outcome to settle, a task that is paused, suspended or asks for input).
// It costs one round trip where the server holds the proposal until then
// (ProposeAction with wait), and goes on with WaitAction where it did not
// (a control plane that runs alone, or a wait past half a minute). Sent
// again after a lost answer, the proposal is still one action.
func (c *Client) ProposeAndWait(ctx context.Context, req *stewardv1.ProposeActionRequest) (*stewardv1.Action, error) {
	req = proto.CloneOf(req)
	req.ProposalId = c.orNew(req.ProposalId)
	req.Wait = true
	resp, err := call(ctx, c.retry, c.tasks.ProposeAction, req)
	if err != nil {
		return nil, err
	}
	// A wait the server served says so with the task's status.
	if resp.TaskStatus != stewardv1.TaskStatus_TASK_STATUS_UNSPECIFIED && !moving(resp.Action.GetStatus(), resp.TaskStatus) {
		return resp.Action, nil
	}
	return c.WaitAction(ctx, req.TaskId, resp.Action.GetActionId())
}

// WaitAction waits, as ProposeAndWait does, for an action Steward is
// moving on. Each call holds at the server until the action changes or
// half a minute passes (GetAction's wait), so it costs no polling.
func (c *Client) WaitAction(ctx context.Context, taskID, actionID string) (*stewardv1.Action, error) {
	for {
		resp, err := call(ctx, c.retry, c.query.GetAction, &stewardv1.GetActionRequest{TaskId: taskID, ActionId: actionID, Wait: true})
		if err != nil {
			return nil, err
		}
		if !moving(resp.Action.GetStatus(), resp.TaskStatus) {
			return resp.Action, nil
		}
	}
}

// moving reports whether Steward moves an action in status s on by itself
// in a task in status ts: no one need act for it to end.
func moving(s stewardv1.ActionStatus, ts stewardv1.TaskStatus) bool {
	switch ts {
	case stewardv1.TaskStatus_TASK_STATUS_PENDING, stewardv1.TaskStatus_TASK_STATUS_RUNNING,
		stewardv1.TaskStatus_TASK_STATUS_WAITING_FOR_APPROVAL, stewardv1.TaskStatus_TASK_STATUS_RECONCILING,
		stewardv1.TaskStatus_TASK_STATUS_COMPENSATING:
	default:
		return false // paused, suspended, asking for input, or ended
	}
	switch s {
	case stewardv1.ActionStatus_ACTION_STATUS_PROPOSED, stewardv1.ActionStatus_ACTION_STATUS_EVALUATED,
		stewardv1.ActionStatus_ACTION_STATUS_APPROVED, stewardv1.ActionStatus_ACTION_STATUS_PERMITTED,
		stewardv1.ActionStatus_ACTION_STATUS_CLAIMED, stewardv1.ActionStatus_ACTION_STATUS_DISPATCHED,
		stewardv1.ActionStatus_ACTION_STATUS_WAITING, stewardv1.ActionStatus_ACTION_STATUS_REVALIDATING:
		return true
	}
	return false
}
