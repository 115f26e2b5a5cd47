package steward

import (
	"context"
	"time"

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
	if resp.TaskStatus != stewardv1.TaskStatus_TASK_STATUS_UNSPECIFIED && !Moving(resp.Action, resp.TaskStatus) {
		return resp.Action, nil
	}
	return c.WaitAction(ctx, req.TaskId, resp.Action.GetActionId())
}

// WaitAction waits, as ProposeAndWait does, for an action Steward is
// moving on. Each call holds at the server until the action changes or
// half a minute passes (GetAction's wait), so it costs no polling; should
// the server answer at once with the action still moving (a server older
// or newer than this client, judging otherwise), it looks again only after
// a pause, never in a tight loop.
func (c *Client) WaitAction(ctx context.Context, taskID, actionID string) (*stewardv1.Action, error) {
	pause := c.retry.First
	for {
		began := time.Now()
		resp, err := call(ctx, c.retry, c.query.GetAction, &stewardv1.GetActionRequest{TaskId: taskID, ActionId: actionID, Wait: true})
		if err != nil {
			return nil, err
		}
		if !Moving(resp.Action, resp.TaskStatus) {
			return resp.Action, nil
		}
		if time.Since(began) < pause {
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-time.After(pause):
			}
			pause = min(2*pause, c.retry.Max)
		}
	}
}

// Moving reports whether Steward still moves action a, of a task in status
// ts, on by itself, with nobody but Steward to act — the server's own rule
// for a wait (GetAction and ProposeAction with wait): governance decides
// what is proposed; execution runs what its task lets run (an active task
// anything, a compensating one its compensations); a call out ends in an
// outcome whatever became of its task; a wait ends with its timer, or with
// its task. Not moving: ended, or a person's turn — an approval, an unknown
// outcome to settle, a permit held by a paused, suspended or asking task.
func Moving(a *stewardv1.Action, ts stewardv1.TaskStatus) bool {
	active := ts == stewardv1.TaskStatus_TASK_STATUS_RUNNING || ts == stewardv1.TaskStatus_TASK_STATUS_WAITING_FOR_APPROVAL ||
		ts == stewardv1.TaskStatus_TASK_STATUS_RECONCILING
	compensating := ts == stewardv1.TaskStatus_TASK_STATUS_COMPENSATING
	switch a.GetStatus() {
	case stewardv1.ActionStatus_ACTION_STATUS_PROPOSED, stewardv1.ActionStatus_ACTION_STATUS_EVALUATED,
		stewardv1.ActionStatus_ACTION_STATUS_APPROVED, stewardv1.ActionStatus_ACTION_STATUS_REVALIDATING,
		stewardv1.ActionStatus_ACTION_STATUS_DISPATCHED:
		return true
	case stewardv1.ActionStatus_ACTION_STATUS_PERMITTED, stewardv1.ActionStatus_ACTION_STATUS_CLAIMED:
		return active || compensating && a.GetCompensates() != ""
	case stewardv1.ActionStatus_ACTION_STATUS_WAITING:
		return active || compensating || ts == stewardv1.TaskStatus_TASK_STATUS_ACCEPTED ||
			ts == stewardv1.TaskStatus_TASK_STATUS_FAILED || ts == stewardv1.TaskStatus_TASK_STATUS_CANCELLED
	}
	return false
}
