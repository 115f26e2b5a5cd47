package control

import (
	"context"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// The rollout commands, as the plane's tests call them (rollout_service.go
// calls the group directly).

func (p *Plane) StartRollout(ctx context.Context, principal string, spec *stewardv1.RolloutSpec) (*stewardv1.Rollout, error) {
	return p.rollouts.StartRollout(ctx, principal, spec)
}

func (p *Plane) GetRollout(ctx context.Context, id string) (*stewardv1.Rollout, error) {
	return p.rollouts.GetRollout(ctx, id)
}

func (p *Plane) ListRollouts(ctx context.Context) ([]*stewardv1.Rollout, error) {
	return p.rollouts.ListRollouts(ctx)
}

func (p *Plane) RollBackRollout(ctx context.Context, principal, id, reason string) (*stewardv1.Rollout, error) {
	return p.rollouts.RollBackRollout(ctx, principal, id, reason)
}

// RolloutTaskEnded is the plane's reaction to a task's end, for a test
// that runs two planes' reactions side by side.
func (p *Plane) RolloutTaskEnded(ctx context.Context, rec *stewardv1.EventRecord) error {
	return p.rollouts.taskEnded(ctx, rec)
}
