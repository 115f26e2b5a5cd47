package steward

import (
	"context"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// ProposeAndWait proposes an action and waits until Steward no longer
// moves it on by itself: it has ended (succeeded, failed, denied,
// rejected, withdrawn), or waits for a person (an approval, an unknown
// outcome to settle, a task that is paused, suspended or asks for input).
// Sent again after a lost answer, the proposal is still one action.
func (c *Client) ProposeAndWait(ctx context.Context, req *stewardv1.ProposeActionRequest) (*stewardv1.Action, error) {
	a, err := c.Propose(ctx, req)
	if err != nil {
		return nil, err
	}
	return c.WaitAction(ctx, req.GetTaskId(), a.ActionId)
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
