package state

import (
	"context"
	"errors"

	"connectrpc.com/connect"

	"google.golang.org/protobuf/proto"

	"github.com/steward-run/steward/pkg/archive"
	"github.com/steward-run/steward/pkg/content"
	"github.com/steward-run/steward/pkg/errs"
	"github.com/steward-run/steward/pkg/event"
	"github.com/steward-run/steward/pkg/eventlog"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/rpc"
	"github.com/steward-run/steward/pkg/task"
)

// ArchivedTasks reads the tasks the log no longer holds, archived
// (pkg/archive; docs/archives.md). The plane reaches it only through
// fromArchive, behind the log: Plane.history for the fold of a view and a
// receipt, eachArchived for ReplayTask and VerifyTask. *archive.Archive
// is one.
type ArchivedTasks interface {
	// Events returns the task's events as they were stored on the log,
	// in order, or fails with archive.ErrNotFound.
	Events(ctx context.Context, taskID string) ([]eventlog.Raw, error)
}

// archivedTask is one task read from the archive: its events as stored,
// opened, and its fold.
type archivedTask struct {
	raws []eventlog.Raw
	recs []*stewardv1.EventRecord
	task *stewardv1.Task
}

// fromArchive reads taskID from the archive for who, when the log has
// none of it: NotFound, in the edge's words, when there is no archive, it
// does not hold the task, or the task is another tenant's.
func (p *Plane) fromArchive(ctx context.Context, who rpc.Identity, taskID string) (*archivedTask, error) {
	if p.cfg.Archive == nil {
		return nil, rpc.TaskNotFound(taskID)
	}
	raws, err := p.cfg.Archive.Events(ctx, taskID)
	if errors.Is(err, archive.ErrNotFound) {
		return nil, rpc.TaskNotFound(taskID)
	}
	if err != nil {
		return nil, errs.Wrap(errs.Unavailable, err, "read task %s from the archive", taskID)
	}
	a := &archivedTask{raws: raws, task: &stewardv1.Task{}}
	for _, raw := range raws {
		ev, err := event.Open(raw.Data)
		if err == nil {
			err = task.Apply(a.task, ev, raw.Sequence)
		}
		if err != nil {
			return nil, errs.Wrap(errs.Corrupt, err, "task %s in the archive at sequence %d; verify its bundle", taskID, raw.Sequence)
		}
		a.recs = append(a.recs, &stewardv1.EventRecord{Sequence: raw.Sequence, Event: ev})
	}
	if who.Verified && a.task.Tenant != who.Tenant {
		return nil, rpc.TaskNotFound(taskID)
	}
	return a, nil
}

// archivedParties are the parties of a task up an archived task's
// delegation: from the views while the log holds it, else the archive's.
func (p *Plane) archivedParties(ctx context.Context, who rpc.Identity) func(string) (parties, bool) {
	return func(taskID string) (parties, bool) {
		if ps, ok := p.views.parties(taskID); ok {
			return ps, true
		}
		a, err := p.fromArchive(ctx, who, taskID)
		if err != nil {
			return parties{}, false
		}
		return partiesOf(a.task), true
	}
}

// blindArchived is blind for an archived task (mayRead over the archive).
func (p *Plane) blindArchived(ctx context.Context, who rpc.Identity, a *archivedTask) *content.Blind {
	if readsEveryTask(who) || mayRead(who, partiesOf(a.task), p.archivedParties(ctx, who)) == nil {
		return nil
	}
	return &content.Blind{Digest: p.cfg.Digest, Roles: who.Roles}
}

// archivedGetTask answers GetTask for a task only the archive holds.
func (p *Plane) archivedGetTask(ctx context.Context, taskID string) (*stewardv1.GetTaskResponse, error) {
	who := rpc.Caller(ctx)
	a, err := p.fromArchive(ctx, who, taskID)
	if err != nil {
		return nil, err
	}
	if size := proto.Size(a.task); size > rpc.MaxResponseBytes {
		return nil, errs.New(errs.TooLarge, "task %s weighs %d bytes, past the %d bytes of an answer: its bundle is in the archive (docs/archives.md)", taskID, size, rpc.MaxResponseBytes)
	}
	if b := p.blindArchived(ctx, who, a); b != nil {
		b.Task(a.task)
	}
	return &stewardv1.GetTaskResponse{Task: a.task}, nil
}

// wrap is a handler's answer from one of the archive's.
func wrap[T any](msg *T, err error) (*connect.Response[T], error) {
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(msg), nil
}

// eachArchived calls fn with the events of a task only the archive holds,
// as stored, once who may read them (mayStream's rule): ReplayTask and
// VerifyTask read an archived task as they read one on the log.
func (p *Plane) eachArchived(ctx context.Context, taskID string, fn func(eventlog.Raw) error) error {
	who := rpc.Caller(ctx)
	a, err := p.fromArchive(ctx, who, taskID)
	if err != nil {
		return err
	}
	if !readsEveryTask(who) {
		if err := mayRead(who, partiesOf(a.task), p.archivedParties(ctx, who)); err != nil {
			return err
		}
	}
	for _, raw := range a.raws {
		if err := fn(raw); err != nil {
			return err
		}
	}
	return nil
}
