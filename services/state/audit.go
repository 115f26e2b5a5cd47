package state

import (
	"context"
	"errors"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/proto"

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

// eachStored calls fn with the task's raw events, one read at a time,
// until fn returns an error; a task with none is NotFound.
func (s *auditService) eachStored(ctx context.Context, taskID string, fn func(eventlog.Raw) error) error {
	if err := checkTaskID(taskID); err != nil {
		return err
	}
	n := 0
	if err := s.plane.log.EachRaw(ctx, taskID, func(raw eventlog.Raw) error {
		n++
		return fn(raw)
	}); err != nil {
		return err
	}
	if n == 0 {
		return s.plane.eachArchived(ctx, taskID, fn)
	}
	return nil
}

// ReplayTask streams the task's stored events, to who may read its content
// (mayStream): they carry its small results. Events are read as they are
// sent, so a long history is never in memory whole.
func (s *auditService) ReplayTask(ctx context.Context, req *connect.Request[stewardv1.ReplayTaskRequest], stream *connect.ServerStream[stewardv1.ReplayTaskResponse]) error {
	if err := checkTaskID(req.Msg.TaskId); err != nil {
		return err
	}
	// Every stored event goes out, verified or not: an auditor judges for
	// themselves and must be able to export a broken history. After the
	// first break, responses carry only the sequence and the bytes.
	r := audit.NewReplayer(req.Msg.TaskId)
	send := func(raw eventlog.Raw) error {
		resp := &stewardv1.ReplayTaskResponse{Record: &stewardv1.EventRecord{Sequence: raw.Sequence}, Data: raw.Data}
		if step, err := r.Next(raw.Data, raw.Sequence); err == nil {
			resp.Record.Event, resp.Task = step.Event, step.Task
		}
		// A task past the bound of an answer is left out, not the event:
		// the export goes on, and the task is the fold of what it sent.
		if resp.Task != nil && proto.Size(resp) > rpc.MaxResponseBytes {
			resp.Task = nil
		}
		return stream.Send(resp)
	}
	err := s.plane.mayStream(ctx, rpc.Caller(ctx), req.Msg.TaskId)
	switch {
	case errs.Is(err, errs.NotFound):
		// Not on the log when looked at: the archive's alone, its reader
		// checked as its events are read (eachArchived). A task created
		// on the log since is not streamed unchecked.
		return s.plane.eachArchived(ctx, req.Msg.TaskId, send)
	case err != nil:
		return err
	}
	return s.eachStored(ctx, req.Msg.TaskId, send)
}

// errChainBroken ends a verification's read at the first break.
var errChainBroken = errors.New("chain broken")

// VerifyTask checks the task's hash chain, for anyone: the verdict, the
// count and any break; the head hash only to who may read the content.
func (s *auditService) VerifyTask(ctx context.Context, req *connect.Request[stewardv1.VerifyTaskRequest]) (*connect.Response[stewardv1.VerifyTaskResponse], error) {
	r := audit.NewReplayer(req.Msg.TaskId)
	// Sequences only, 8 bytes an event, to name where the chain broke.
	var seqs []uint64
	err := s.eachStored(ctx, req.Msg.TaskId, func(raw eventlog.Raw) error {
		seqs = append(seqs, raw.Sequence)
		if r.Check(raw.Data, raw.Sequence) != nil {
			return errChainBroken
		}
		return nil
	})
	if err != nil && !errors.Is(err, errChainBroken) {
		return nil, err
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
		resp.Break = &stewardv1.ChainBreak{Index: uint32(b.Index), Sequence: seqs[b.Index], EventId: b.EventID, Reason: b.Reason}
	}
	return connect.NewResponse(resp), nil
}
