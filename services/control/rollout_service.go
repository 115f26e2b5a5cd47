package control

import (
	"context"

	"connectrpc.com/connect"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/gen/steward/v1/stewardv1connect"
	"github.com/steward-run/steward/pkg/rpc"
)

// rolloutService implements RolloutService over the plane.
type rolloutService struct {
	stewardv1connect.UnimplementedRolloutServiceHandler
	plane *Plane
}

func (s *rolloutService) StartRollout(ctx context.Context, req *connect.Request[stewardv1.StartRolloutRequest]) (*connect.Response[stewardv1.StartRolloutResponse], error) {
	r, err := s.plane.rollouts.StartRollout(ctx, rpc.Principal(ctx), req.Msg.Spec)
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&stewardv1.StartRolloutResponse{Rollout: r}), nil
}

func (s *rolloutService) GetRollout(ctx context.Context, req *connect.Request[stewardv1.GetRolloutRequest]) (*connect.Response[stewardv1.GetRolloutResponse], error) {
	r, err := s.plane.rollouts.GetRollout(ctx, req.Msg.RolloutId)
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&stewardv1.GetRolloutResponse{Rollout: r}), nil
}

func (s *rolloutService) ListRollouts(ctx context.Context, _ *connect.Request[stewardv1.ListRolloutsRequest]) (*connect.Response[stewardv1.ListRolloutsResponse], error) {
	rs, err := s.plane.rollouts.ListRollouts(ctx)
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&stewardv1.ListRolloutsResponse{Rollouts: rs}), nil
}

func (s *rolloutService) RollBackRollout(ctx context.Context, req *connect.Request[stewardv1.RollBackRolloutRequest]) (*connect.Response[stewardv1.RollBackRolloutResponse], error) {
	r, err := s.plane.rollouts.RollBackRollout(ctx, rpc.Principal(ctx), req.Msg.RolloutId, req.Msg.Reason)
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&stewardv1.RollBackRolloutResponse{Rollout: r}), nil
}
