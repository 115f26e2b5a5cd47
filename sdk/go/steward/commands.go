package steward

import (
	"context"

	"google.golang.org/protobuf/proto"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// Each command below fills in the id that makes it safe to send again
// (when the caller left it empty) on a copy of the request, once, before
// the first attempt; every retry sends that same id.

// CreateTask creates a task under req.RequestId (chosen when empty).
func (c *Client) CreateTask(ctx context.Context, req *stewardv1.CreateTaskRequest) (*stewardv1.Task, error) {
	return taskCommand(ctx, c, c.tasks.CreateTask, req)
}

// Propose proposes an action under req.ProposalId (chosen when empty):
// however often it is sent, the task has one action for it.
func (c *Client) Propose(ctx context.Context, req *stewardv1.ProposeActionRequest) (*stewardv1.Action, error) {
	req = proto.CloneOf(req)
	req.ProposalId = c.orNew(req.ProposalId)
	resp, err := call(ctx, c.retry, c.tasks.ProposeAction, req)
	return resp.GetAction(), err
}

// RecordDecision records a model decision under its decision_id (chosen
// when empty). An agent that restarts finds it with ListDecisions rather
// than ask the model again.
func (c *Client) RecordDecision(ctx context.Context, req *stewardv1.RecordDecisionRequest) (*stewardv1.Decision, error) {
	req = proto.CloneOf(req)
	if req.Decision == nil {
		req.Decision = &stewardv1.Decision{}
	}
	req.Decision.DecisionId = c.orNew(req.Decision.DecisionId)
	resp, err := call(ctx, c.retry, c.tasks.RecordDecision, req)
	return resp.GetDecision(), err
}

// AttachContext adds an item to the task's context ledger under its
// context_id (chosen when empty).
func (c *Client) AttachContext(ctx context.Context, req *stewardv1.AttachContextRequest) (*stewardv1.ContextItem, error) {
	req = proto.CloneOf(req)
	if req.Item == nil {
		req.Item = &stewardv1.ContextItem{}
	}
	req.Item.ContextId = c.orNew(req.Item.ContextId)
	resp, err := call(ctx, c.retry, c.tasks.AttachContext, req)
	return resp.GetItem(), err
}

// SubmitPlan submits or revises the task's plan under req.RequestId
// (chosen when empty).
func (c *Client) SubmitPlan(ctx context.Context, req *stewardv1.SubmitPlanRequest) (*stewardv1.SubmitPlanResponse, error) {
	req = proto.CloneOf(req)
	req.RequestId = c.orNew(req.RequestId)
	return call(ctx, c.retry, c.tasks.SubmitPlan, req)
}

// SubmitArtifact submits one of the task's results under req.RequestId
// (chosen when empty).
func (c *Client) SubmitArtifact(ctx context.Context, req *stewardv1.SubmitArtifactRequest) (*stewardv1.SubmitArtifactResponse, error) {
	req = proto.CloneOf(req)
	req.RequestId = c.orNew(req.RequestId)
	return call(ctx, c.retry, c.tasks.SubmitArtifact, req)
}

// MarkProduced says the task's result is complete, for its acceptance,
// under its request_id (chosen when empty): an agent that may be killed
// after the call and run again gives one of its own, so that the second
// run's is the same command.
func (c *Client) MarkProduced(ctx context.Context, req *stewardv1.MarkProducedRequest) (*stewardv1.MarkProducedResponse, error) {
	req = proto.CloneOf(req)
	req.RequestId = c.orNew(req.RequestId)
	return call(ctx, c.retry, c.tasks.MarkProduced, req)
}
