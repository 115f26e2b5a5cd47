package control

import (
	"context"

	"connectrpc.com/connect"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/gen/steward/v1/stewardv1connect"
	"github.com/steward-run/steward/pkg/rpc"
)

// scheduleService implements ScheduleService over the plane.
type scheduleService struct {
	stewardv1connect.UnimplementedScheduleServiceHandler
	plane *Plane
}

func (s *scheduleService) CreateSchedule(ctx context.Context, req *connect.Request[stewardv1.CreateScheduleRequest]) (*connect.Response[stewardv1.CreateScheduleResponse], error) {
	sc, created, err := s.plane.schedules.CreateSchedule(ctx, rpc.Principal(ctx), req.Msg)
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&stewardv1.CreateScheduleResponse{Schedule: sc, Created: created}), nil
}

func (s *scheduleService) GetSchedule(ctx context.Context, req *connect.Request[stewardv1.GetScheduleRequest]) (*connect.Response[stewardv1.GetScheduleResponse], error) {
	sc, err := s.plane.schedules.GetSchedule(ctx, req.Msg.ScheduleId)
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&stewardv1.GetScheduleResponse{Schedule: sc}), nil
}

func (s *scheduleService) ListSchedules(ctx context.Context, req *connect.Request[stewardv1.ListSchedulesRequest]) (*connect.Response[stewardv1.ListSchedulesResponse], error) {
	page, next, err := s.plane.schedules.ListSchedules(ctx, req.Msg)
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&stewardv1.ListSchedulesResponse{Schedules: page, NextPageToken: next}), nil
}

func (s *scheduleService) PauseSchedule(ctx context.Context, req *connect.Request[stewardv1.PauseScheduleRequest]) (*connect.Response[stewardv1.PauseScheduleResponse], error) {
	sc, err := s.plane.schedules.steerSchedule(ctx, rpc.Principal(ctx), req.Msg.ScheduleId, req.Msg.Reason, &stewardv1.SchedulePaused{Reason: req.Msg.Reason})
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&stewardv1.PauseScheduleResponse{Schedule: sc}), nil
}

func (s *scheduleService) ResumeSchedule(ctx context.Context, req *connect.Request[stewardv1.ResumeScheduleRequest]) (*connect.Response[stewardv1.ResumeScheduleResponse], error) {
	sc, err := s.plane.schedules.steerSchedule(ctx, rpc.Principal(ctx), req.Msg.ScheduleId, req.Msg.Reason, &stewardv1.ScheduleResumed{Reason: req.Msg.Reason})
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&stewardv1.ResumeScheduleResponse{Schedule: sc}), nil
}

func (s *scheduleService) DeleteSchedule(ctx context.Context, req *connect.Request[stewardv1.DeleteScheduleRequest]) (*connect.Response[stewardv1.DeleteScheduleResponse], error) {
	sc, err := s.plane.schedules.steerSchedule(ctx, rpc.Principal(ctx), req.Msg.ScheduleId, req.Msg.Reason, &stewardv1.ScheduleDeleted{Reason: req.Msg.Reason})
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&stewardv1.DeleteScheduleResponse{Schedule: sc}), nil
}
