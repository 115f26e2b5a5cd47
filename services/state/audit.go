package state

import (
	"context"

	"connectrpc.com/connect"

	"github.com/steward-run/steward/pkg/audit"
	"github.com/steward-run/steward/pkg/errs"
	"github.com/steward-run/steward/pkg/eventlog"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/gen/steward/v1/stewardv1connect"
	"github.com/steward-run/steward/pkg/rpc"
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

// ReplayTask streams the task's stored events, to who may read its content
// (mayStream): they carry its small results.
func (s *auditService) ReplayTask(ctx context.Context, req *connect.Request[stewardv1.ReplayTaskRequest], stream *connect.ServerStream[stewardv1.ReplayTaskResponse]) error {
	if err := checkTaskID(req.Msg.TaskId); err != nil {
		return err
	}
	if err := s.plane.mayStream(ctx, rpc.Caller(ctx), req.Msg.TaskId); err != nil {
		return err
	}
	raws, err := s.stored(ctx, req.Msg.TaskId)
	if err != nil {
		return err
	}
	// Every stored event goes out, verified or not: an auditor judges for
	// themselves and must be able to export a broken history. After the
	// first break, responses carry only the sequence and the bytes.
	r := audit.NewReplayer(req.Msg.TaskId)
	for _, raw := range raws {
		resp := &stewardv1.ReplayTaskResponse{Record: &stewardv1.EventRecord{Sequence: raw.Sequence}, Data: raw.Data}
		if step, err := r.Next(raw.Data, raw.Sequence); err == nil {
			resp.Record.Event, resp.Task = step.Event, step.Task
		}
		if err := stream.Send(resp); err != nil {
			return err
		}
	}
	return nil
}

// VerifyTask checks the task's hash chain, for anyone: the verdict, the
// count and any break; the head hash only to who may read the content.
func (s *auditService) VerifyTask(ctx context.Context, req *connect.Request[stewardv1.VerifyTaskRequest]) (*connect.Response[stewardv1.VerifyTaskResponse], error) {
	raws, err := s.stored(ctx, req.Msg.TaskId)
	if err != nil {
		return nil, err
	}
	r := audit.NewReplayer(req.Msg.TaskId)
	for _, raw := range raws {
		if err := r.Check(raw.Data, raw.Sequence); err != nil {
			break
		}
	}
	rep := r.Report()
	resp := &stewardv1.VerifyTaskResponse{Ok: rep.OK(), EventCount: uint32(rep.Events), HeadHash: rep.Head}
	if s.plane.blindLog(rpc.Caller(ctx), req.Msg.TaskId) != nil {
		// The head hash covers the last event, a small result inline
		// included: to one who may not read the content, a way to test
		// guesses at it (content.Blind.Task). The verdict stays open.
		resp.HeadHash = nil
	}
	if b := rep.Break; b != nil {
		resp.Break = &stewardv1.ChainBreak{Index: uint32(b.Index), Sequence: raws[b.Index].Sequence, EventId: b.EventID, Reason: b.Reason}
	}
	return connect.NewResponse(resp), nil
}
