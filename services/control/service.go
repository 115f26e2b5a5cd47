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
	t, err := s.command(ctx, req.Msg.TaskId, req.Msg.RequestId, req.Msg.Reason, func(reason string) eventPayload {
		return &stewardv1.TaskPaused{Reason: reason}
	})
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&stewardv1.PauseTaskResponse{Task: t}), nil
}

func (s *taskService) ResumeTask(ctx context.Context, req *connect.Request[stewardv1.ResumeTaskRequest]) (*connect.Response[stewardv1.ResumeTaskResponse], error) {
	m := req.Msg
	if err := checkCommand(m.TaskId, m.RequestId, m.Reason); err != nil {
		return nil, err
	}
	t, err := s.plane.Resume(ctx, rpc.Principal(ctx), m.TaskId, m.RequestId, m.Reason)
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&stewardv1.ResumeTaskResponse{Task: t}), nil
}

// command validates the common fields of a lifecycle command and applies it.
func (s *taskService) command(ctx context.Context, taskID, requestID, reason string, payload func(string) eventPayload) (*stewardv1.Task, error) {
	if err := checkCommand(taskID, requestID, reason); err != nil {
		return nil, err
	}
	return s.plane.Apply(ctx, rpc.Principal(ctx), taskID, requestID, payload(reason))
}

func (s *taskService) ProposeAction(ctx context.Context, req *connect.Request[stewardv1.ProposeActionRequest]) (*connect.Response[stewardv1.ProposeActionResponse], error) {
	if err := s.plane.mayActFor(ctx, rpc.Caller(ctx), req.Msg.TaskId); err != nil {
		return nil, err
	}
	a, created, err := s.plane.ProposeAction(ctx, rpc.Principal(ctx), req.Msg)
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&stewardv1.ProposeActionResponse{Action: a, Created: created}), nil
}
