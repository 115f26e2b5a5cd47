package state

import (
	"context"

	"connectrpc.com/connect"

	"github.com/steward-run/steward/pkg/audit"
	"github.com/steward-run/steward/pkg/errs"
	"github.com/steward-run/steward/pkg/eventlog"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/gen/steward/v1/stewardv1connect"
)

type auditService struct {
	stewardv1connect.UnimplementedAuditServiceHandler
	plane *Plane
}

// stored reads a task's raw events; a task with none is NotFound.
func (s *auditService) stored(ctx context.Context, taskID string) ([]eventlog.Raw, error) {
	if err := checkTaskID(taskID); err != nil {
		return nil, err
	}
	raws, err := s.plane.log.ReadRaw(ctx, taskID)
	if err != nil {
		return nil, err
	}
	if len(raws) == 0 {
		return nil, errs.New(errs.NotFound, "task %s not found", taskID)
	}
	return raws, nil
}

func (s *auditService) ReplayTask(ctx context.Context, req *connect.Request[stewardv1.ReplayTaskRequest], stream *connect.ServerStream[stewardv1.ReplayTaskResponse]) error {
	raws, err := s.stored(ctx, req.Msg.TaskId)
	if err != nil {
		return err
	}
	var r audit.Replayer
	for _, raw := range raws {
		step, err := r.Next(raw.Data, raw.Sequence)
		if err != nil {
			return errs.Wrap(errs.Corrupt, err, "task %s", req.Msg.TaskId)
		}
		if err := stream.Send(&stewardv1.ReplayTaskResponse{
			Record: &stewardv1.EventRecord{Sequence: raw.Sequence, Event: step.Event},
			Task:   step.Task,
			Data:   raw.Data,
		}); err != nil {
			return err
		}
	}
	return nil
}

func (s *auditService) VerifyTask(ctx context.Context, req *connect.Request[stewardv1.VerifyTaskRequest]) (*connect.Response[stewardv1.VerifyTaskResponse], error) {
	raws, err := s.stored(ctx, req.Msg.TaskId)
	if err != nil {
		return nil, err
	}
	var r audit.Replayer
	for _, raw := range raws {
		if _, err := r.Next(raw.Data, raw.Sequence); err != nil {
			break
		}
	}
	rep := r.Report()
	resp := &stewardv1.VerifyTaskResponse{Ok: rep.OK(), EventCount: uint32(rep.Events), HeadHash: rep.Head}
	if b := rep.Break; b != nil {
		resp.Break = &stewardv1.ChainBreak{Index: uint32(b.Index), Sequence: raws[b.Index].Sequence, EventId: b.EventID, Reason: b.Reason}
	}
	return connect.NewResponse(resp), nil
}
