package state

import (
	"context"
	"fmt"

	"connectrpc.com/connect"

	"github.com/steward-run/steward/pkg/action"
	"github.com/steward-run/steward/pkg/auditbundle"
	"github.com/steward-run/steward/pkg/errs"
	"github.com/steward-run/steward/pkg/event"
	"github.com/steward-run/steward/pkg/eventlog"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/rpc"
	"github.com/steward-run/steward/pkg/task"
)

// bundleChunk is how many events one ExportBundle message carries at most:
// a long history goes in several, each well inside an answer's bound.
const bundleChunk = 64

// ExportBundle streams what an offline verifier needs of a task
// (docs/audit.md, "Audit bundles"): its events and those of its sub-tasks
// and ancestors that the caller may read (the others it names as
// withheld, auditbundle.TaskRelatives), each task's receipt, and what
// their events reference — requests and results stored by reference,
// the tool registrations of the versions their actions name, each
// snapshot's recorded input and each deciding revision's sources.
// Referenced pieces the stores do not hold (a snapshot recorded before
// inputs were kept) are left out; the verifier says so.
func (s *auditService) ExportBundle(ctx context.Context, req *connect.Request[stewardv1.ExportBundleRequest], stream *connect.ServerStream[stewardv1.ExportBundleResponse]) error {
	root := req.Msg.TaskId
	if err := checkTaskID(root); err != nil {
		return err
	}
	who := rpc.Caller(ctx)
	if err := s.plane.mayStream(ctx, who, root); err != nil {
		return err
	}
	refs := newBundleRefs()
	queue, seen := []string{root}, map[string]bool{root: true}
	for len(queue) > 0 {
		id := queue[0]
		queue = queue[1:]
		if id != root {
			if err := s.plane.mayStream(ctx, who, id); err != nil {
				if errs.CodeOf(err) != errs.PermissionDenied && errs.CodeOf(err) != errs.NotFound {
					return err
				}
				// A relative the caller may not read stays out, and the
				// bundle says so: verify requires every task named.
				if err := sendWithheld(stream, id, "the exporter may not read it"); err != nil {
					return err
				}
				continue
			}
		}
		related, err := s.sendTask(ctx, id, id == root, refs, stream)
		if err != nil {
			return err
		}
		for _, r := range related {
			if !seen[r] && eventlog.ValidTaskID(r) {
				seen[r] = true
				queue = append(queue, r)
			}
		}
	}
	return s.sendRefs(ctx, refs, stream)
}

// sendWithheld says the bundle leaves taskID out, and why.
func sendWithheld(stream *connect.ServerStream[stewardv1.ExportBundleResponse], taskID, reason string) error {
	return stream.Send(&stewardv1.ExportBundleResponse{Piece: &stewardv1.ExportBundleResponse_Withheld{Withheld: &stewardv1.WithheldTask{TaskId: taskID, Reason: reason}}})
}

// sendTask sends one task's events and receipt, notes what they
// reference, and returns the tasks related to it (sub-tasks, ancestors,
// the task it was forked from).
func (s *auditService) sendTask(ctx context.Context, taskID string, required bool, refs *bundleRefs, stream *connect.ServerStream[stewardv1.ExportBundleResponse]) ([]string, error) {
	raws, err := s.plane.log.ReadRaw(ctx, taskID)
	if err != nil {
		return nil, err
	}
	if len(raws) == 0 {
		if required {
			return nil, errs.New(errs.NotFound, "task %s not found", taskID)
		}
		return nil, sendWithheld(stream, taskID, "the log holds no event of it")
	}
	var recs []*stewardv1.EventRecord
	t := &stewardv1.Task{}
	var related []string
	for _, raw := range raws {
		ev, err := event.Open(raw.Data)
		if err != nil {
			return nil, errs.Wrap(errs.Corrupt, err, "task %s at sequence %d; export its events with 'steward audit export' and verify them", taskID, raw.Sequence)
		}
		recs = append(recs, &stewardv1.EventRecord{Sequence: raw.Sequence, Event: ev})
		refs.noteEvent(ev)
		related = append(related, auditbundle.EventRelatives(ev)...)
		if err := task.Apply(t, ev, raw.Sequence); err != nil {
			return nil, errs.Wrap(errs.Corrupt, err, "task %s at sequence %d", taskID, raw.Sequence)
		}
	}
	refs.noteTask(t)
	related = append(related, auditbundle.TaskRelatives(t)...)
	receipt, err := BuildReceipt(recs)
	if err != nil {
		return nil, err
	}
	for i := 0; i < len(raws); i += bundleChunk {
		bt := &stewardv1.BundleTask{TaskId: taskID}
		for _, raw := range raws[i:min(i+bundleChunk, len(raws))] {
			bt.Events = append(bt.Events, &stewardv1.BundleEvent{Sequence: raw.Sequence, Data: raw.Data})
		}
		if i+bundleChunk >= len(raws) {
			bt.Receipt = receipt
		}
		if err := stream.Send(&stewardv1.ExportBundleResponse{Piece: &stewardv1.ExportBundleResponse_Task{Task: bt}}); err != nil {
			return nil, err
		}
	}
	return related, nil
}

// sendRefs sends what the tasks referenced, each piece once, sorted.
func (s *auditService) sendRefs(ctx context.Context, refs *bundleRefs, stream *connect.ServerStream[stewardv1.ExportBundleResponse]) error {
	send := func(r *stewardv1.ExportBundleResponse) error { return stream.Send(r) }
	cfg := s.plane.cfg
	if (len(refs.requests) > 0 && cfg.Requests == nil) || (len(refs.results) > 0 && cfg.Results == nil) {
		return errs.New(errs.Unavailable, "this state plane has no request or result store to read the bundle's references from")
	}
	for _, kind := range []struct {
		what  string
		refs  map[string]storedRef
		store *action.Store
		piece func(*stewardv1.BundleBlob) *stewardv1.ExportBundleResponse
	}{
		{"request", refs.requests, cfg.Requests, func(b *stewardv1.BundleBlob) *stewardv1.ExportBundleResponse {
			return &stewardv1.ExportBundleResponse{Piece: &stewardv1.ExportBundleResponse_Request{Request: b}}
		}},
		{"result", refs.results, cfg.Results, func(b *stewardv1.BundleBlob) *stewardv1.ExportBundleResponse {
			return &stewardv1.ExportBundleResponse{Piece: &stewardv1.ExportBundleResponse_Result{Result: b}}
		}},
	} {
		for _, r := range sorted(kind.refs) {
			data, err := kind.store.Get(ctx, r.ref, r.hash)
			if err != nil {
				return fmt.Errorf("%s %s: %w", kind.what, r.hash, err)
			}
			if err := send(kind.piece(&stewardv1.BundleBlob{Hash: r.hash, Data: data})); err != nil {
				return err
			}
		}
	}
	if err := s.sendTools(ctx, refs, send); err != nil {
		return err
	}
	return s.sendPolicy(ctx, refs, send)
}
