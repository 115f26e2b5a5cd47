package steward

import (
	"context"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// Rollouts (docs/rollouts.md): a tool version ramped up over new tasks,
// rolled back when its tasks end badly.

// StartRollout starts a rollout of spec. A retry after a lost answer is
// refused (failed_precondition) naming the rollout the lost attempt
// started: one rollout of a tool ramps at a time.
func (c *Client) StartRollout(ctx context.Context, spec *stewardv1.RolloutSpec) (*stewardv1.Rollout, error) {
	resp, err := call(ctx, c.retry, c.rollouts.StartRollout, &stewardv1.StartRolloutRequest{Spec: spec})
	return resp.GetRollout(), err
}

// GetRollout reads a rollout: its state, step and the step's figures.
func (c *Client) GetRollout(ctx context.Context, id string) (*stewardv1.Rollout, error) {
	resp, err := call(ctx, c.retry, c.rollouts.GetRollout, &stewardv1.GetRolloutRequest{RolloutId: id})
	return resp.GetRollout(), err
}

// ListRollouts reads the caller's tenant's rollouts, newest first.
func (c *Client) ListRollouts(ctx context.Context) ([]*stewardv1.Rollout, error) {
	resp, err := call(ctx, c.retry, c.rollouts.ListRollouts, &stewardv1.ListRolloutsRequest{})
	return resp.GetRollouts(), err
}

// RollBackRollout rolls a ramping rollout back by hand.
func (c *Client) RollBackRollout(ctx context.Context, id, reason string) (*stewardv1.Rollout, error) {
	resp, err := call(ctx, c.retry, c.rollouts.RollBackRollout, &stewardv1.RollBackRolloutRequest{RolloutId: id, Reason: reason})
	return resp.GetRollout(), err
}
