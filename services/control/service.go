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

// ProposeAction with wait answers once the action has stopped moving,
// from the views of the process's state plane (Config.Outcomes). The
// proposal is on the log by then: a wait that fails answers with the
// action as proposed, which the caller waits on with GetAction.
func (s *taskService) ProposeAction(ctx context.Context, req *connect.Request[stewardv1.ProposeActionRequest]) (*connect.Response[stewardv1.ProposeActionResponse], error) {
	a, created, seen, err := proposeAction(ctx, s.plane, rpc.Principal(ctx), req.Msg)
	if err != nil {
		return nil, err
	}
	resp := &stewardv1.ProposeActionResponse{Action: a, Created: created}
	if req.Msg.Wait && s.plane.outcomes != nil {
		if got, err := s.plane.outcomes.WaitAction(ctx, req.Msg.TaskId, a.ActionId, seen); err == nil {
			resp.Action, resp.TaskStatus, resp.TaskStatusReason, resp.LastSequence = got.Action, got.TaskStatus, got.TaskStatusReason, got.LastSequence
		}
	}
	return connect.NewResponse(resp), nil
}
