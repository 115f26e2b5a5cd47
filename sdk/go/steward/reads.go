package steward

import (
	"context"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// Reads change nothing, so each is simply sent again while unanswered.

// GetTask reads a task as its last event left it.
func (c *Client) GetTask(ctx context.Context, taskID string) (*stewardv1.Task, error) {
	resp, err := call(ctx, c.retry, c.query.GetTask, &stewardv1.GetTaskRequest{TaskId: taskID})
	return resp.GetTask(), err
}

// GetAction reads one action of a task.
func (c *Client) GetAction(ctx context.Context, taskID, actionID string) (*stewardv1.Action, error) {
	resp, err := call(ctx, c.retry, c.query.GetAction, &stewardv1.GetActionRequest{TaskId: taskID, ActionId: actionID})
	return resp.GetAction(), err
}

// ListDecisions lists the decisions a task recorded, a page at a time
// from pageToken ("" for the first).
func (c *Client) ListDecisions(ctx context.Context, taskID, pageToken string) (*stewardv1.ListDecisionsResponse, error) {
	return call(ctx, c.retry, c.query.ListDecisions, &stewardv1.ListDecisionsRequest{TaskId: taskID, PageToken: pageToken})
}

// GetResult reads what an action's tool answered.
func (c *Client) GetResult(ctx context.Context, taskID, actionID string) (*stewardv1.GetResultResponse, error) {
	return call(ctx, c.retry, c.query.GetResult, &stewardv1.GetResultRequest{TaskId: taskID, ActionId: actionID})
}

// GetReceipt reads the task's receipt: what it did, why, at what cost.
func (c *Client) GetReceipt(ctx context.Context, taskID string) (*stewardv1.GetReceiptResponse, error) {
	return call(ctx, c.retry, c.query.GetReceipt, &stewardv1.GetReceiptRequest{TaskId: taskID})
}
