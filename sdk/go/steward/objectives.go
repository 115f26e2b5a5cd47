package steward

import (
	"context"

	"google.golang.org/protobuf/proto"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// CreateObjective opens an objective under req.RequestId (chosen when
// empty): however often it is sent, there is one objective for it.
func (c *Client) CreateObjective(ctx context.Context, req *stewardv1.CreateObjectiveRequest) (*stewardv1.Objective, error) {
	req = proto.CloneOf(req)
	req.RequestId = c.orNew(req.RequestId)
	resp, err := call(ctx, c.retry, c.tasks.CreateObjective, req)
	return resp.GetObjective(), err
}

// CloseObjective ends an objective, done or abandoned; the same close
// again answers it as it is, so it is safe to send again.
func (c *Client) CloseObjective(ctx context.Context, req *stewardv1.CloseObjectiveRequest) (*stewardv1.Objective, error) {
	resp, err := call(ctx, c.retry, c.tasks.CloseObjective, req)
	return resp.GetObjective(), err
}

// GetObjective reads an objective, its tasks taken together and a page
// of them.
func (c *Client) GetObjective(ctx context.Context, req *stewardv1.GetObjectiveRequest) (*stewardv1.GetObjectiveResponse, error) {
	return call(ctx, c.retry, c.query.GetObjective, req)
}

// ListObjectives lists a page of the caller's tenant's objectives.
func (c *Client) ListObjectives(ctx context.Context, req *stewardv1.ListObjectivesRequest) (*stewardv1.ListObjectivesResponse, error) {
	return call(ctx, c.retry, c.query.ListObjectives, req)
}

// GetTaskTree reads a task with its sub-tasks, recursively, bounded.
func (c *Client) GetTaskTree(ctx context.Context, req *stewardv1.GetTaskTreeRequest) (*stewardv1.TaskTreeNode, error) {
	resp, err := call(ctx, c.retry, c.query.GetTaskTree, req)
	return resp.GetRoot(), err
}
