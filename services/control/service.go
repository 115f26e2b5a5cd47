package control

import (
	"context"

	"connectrpc.com/connect"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/gen/steward/v1/stewardv1connect"
	"github.com/steward-run/steward/pkg/rpc"
)

// taskService implements TaskService over the plane.
type taskService struct {
	stewardv1connect.UnimplementedTaskServiceHandler
	plane *Plane
}

func (s *taskService) CreateTask(ctx context.Context, req *connect.Request[stewardv1.CreateTaskRequest]) (*connect.Response[stewardv1.CreateTaskResponse], error) {
	t, created, err := s.plane.CreateTask(ctx, rpc.Principal(ctx), req.Msg)
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&stewardv1.CreateTaskResponse{Task: t, Created: created}), nil
}

func (s *taskService) CancelTask(ctx context.Context, req *connect.Request[stewardv1.CancelTaskRequest]) (*connect.Response[stewardv1.CancelTaskResponse], error) {
	t, err := s.plane.CancelTask(ctx, rpc.Principal(ctx), req.Msg)
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&stewardv1.CancelTaskResponse{Task: t}), nil
}

func (s *taskService) FailTask(ctx context.Context, req *connect.Request[stewardv1.FailTaskRequest]) (*connect.Response[stewardv1.FailTaskResponse], error) {
	t, err := s.plane.FailTask(ctx, rpc.Principal(ctx), req.Msg)
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&stewardv1.FailTaskResponse{Task: t}), nil
}

func (s *taskService) PauseTask(ctx context.Context, req *connect.Request[stewardv1.PauseTaskRequest]) (*connect.Response[stewardv1.PauseTaskResponse], error) {
	t, err := s.plane.PauseTask(ctx, rpc.Caller(ctx), req.Msg)
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&stewardv1.PauseTaskResponse{Task: t}), nil
}

func (s *taskService) ResumeTask(ctx context.Context, req *connect.Request[stewardv1.ResumeTaskRequest]) (*connect.Response[stewardv1.ResumeTaskResponse], error) {
	t, err := s.plane.ResumeTask(ctx, rpc.Caller(ctx), req.Msg)
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&stewardv1.ResumeTaskResponse{Task: t}), nil
}

func (s *taskService) ProposeAction(ctx context.Context, req *connect.Request[stewardv1.ProposeActionRequest]) (*connect.Response[stewardv1.ProposeActionResponse], error) {
	a, created, err := s.plane.ProposeAction(ctx, rpc.Principal(ctx), req.Msg)
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&stewardv1.ProposeActionResponse{Action: a, Created: created}), nil
}
