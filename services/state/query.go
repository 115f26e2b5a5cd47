package state

import (
	"context"
	"time"

	"connectrpc.com/connect"

	"github.com/steward-run/steward/pkg/errs"
	"github.com/steward-run/steward/pkg/eventlog"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/gen/steward/v1/stewardv1connect"
	"github.com/steward-run/steward/pkg/rpc"
)

// Paging limits for ListTasks.
const (
	DefaultPageSize = 100
	MaxPageSize     = 1000
)

// freshnessWait bounds how long a read waits for the views to catch up
// with the log before it answers Unavailable.
const freshnessWait = 5 * time.Second

type queryService struct {
	stewardv1connect.UnimplementedQueryServiceHandler
	plane *Plane
}

func checkTaskID(id string) error {
	if id == "" {
		return errs.Field("task_id", "is required")
	}
	if !eventlog.ValidTaskID(id) {
		return errs.Field("task_id", "%s is not a task id: "+eventlog.TaskIDRule, errs.Quote(id))
	}
	return nil
}

// caughtUp returns once the projection has caught up with the task's last
// event on the log: a client that just wrote reads its write.
func (p *Plane) caughtUp(ctx context.Context, taskID string) error {
	return p.caughtUpTo(ctx, taskID, 0)
}

// caughtUpTo is caughtUp for a caller that knows the task is on the log
// up to seen (0 for nothing): the projection waits for that, without a
// request to the log for the task's last event. The caller's write is at
// or before seen, so it reads its write as well.
func (p *Plane) caughtUpTo(ctx context.Context, taskID string, seen uint64) error {
	if err := checkTaskID(taskID); err != nil {
		return err
	}
	last := seen
	if last == 0 {
		var err error
		if last, err = p.log.LastSequence(ctx, taskID); err != nil {
			return err
		}
		if last == 0 {
			return errs.New(errs.NotFound, "task %s not found", taskID)
		}
	}
	wctx, cancel := context.WithTimeout(ctx, freshnessWait)
	defer cancel()
	return p.views.WaitFor(wctx, last)
}

// noView is the error for a task the log has events of but the projection
// holds no view of.
func noView(taskID string) error {
	return errs.New(errs.Corrupt, "task %s has events but no valid view; run VerifyTask", taskID)
}

// GetTask serves the task's view, read-your-writes, without the inline
// results of a caller who may not read its content (hideContent); as
// GetAction and ListTasks. A plan is shown with its next steps
// (showReady).
func (s *queryService) GetTask(ctx context.Context, req *connect.Request[stewardv1.GetTaskRequest]) (*connect.Response[stewardv1.GetTaskResponse], error) {
	if err := s.plane.caughtUp(ctx, req.Msg.TaskId); err != nil {
		if errs.Is(err, errs.NotFound) {
			return wrap(s.plane.archivedGetTask(ctx, req.Msg.TaskId))
		}
		return nil, err
	}
	// Weigh the task before copying it: one past the bound of an answer
	// is refused before it is built. An evicted task is read cold once.
	var t *stewardv1.Task
	err := s.plane.read(ctx, req.Msg.TaskId, func(views *Projection) error {
		size, err := views.Size(req.Msg.TaskId)
		if err != nil {
			return err
		}
		if size > rpc.MaxResponseBytes {
			return errs.New(errs.TooLarge, "task %s weighs %d bytes, past the %d bytes of an answer: its summary is in ListTasks, its actions one by one in GetAction", req.Msg.TaskId, size, rpc.MaxResponseBytes)
		}
		t, err = views.Get(req.Msg.TaskId)
		return err
	})
	if errs.Is(err, errs.NotFound) {
		return nil, noView(req.Msg.TaskId)
	}
	if err != nil {
		return nil, err
	}
	if b := s.plane.blind(rpc.Caller(ctx), func() parties { return partiesOf(t) }); b != nil {
		b.Task(t)
	}
	showReady(t)
	return connect.NewResponse(&stewardv1.GetTaskResponse{Task: t}), nil
}

// GetAction serves one action from the task's view, read-your-writes as
// GetTask, copying that action only: what a client polling one action
// pays does not grow with the task's ledger.
func (s *queryService) GetAction(ctx context.Context, req *connect.Request[stewardv1.GetActionRequest]) (*connect.Response[stewardv1.GetActionResponse], error) {
	resp, err := s.plane.action(ctx, req.Msg.TaskId, req.Msg.ActionId, req.Msg.Wait, 0)
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(resp), nil
}

// WaitAction is GetAction with wait, for the control plane of the same
// process (control.Config.Outcomes): a ProposeAction with wait learns its
// action's outcome from these views, as a GetAction would, without a
// second call. The caller is the one in ctx. seen is a sequence of the
// task's the caller knows is on the log and includes the action (its
// proposal's, or later): the views wait for it instead of asking the log
// for the task's last event, as a GetAction must; 0 asks.
func (p *Plane) WaitAction(ctx context.Context, taskID, actionID string, seen uint64) (*stewardv1.GetActionResponse, error) {
	return p.action(ctx, taskID, actionID, true, seen)
}

// action reads one action as GetAction answers it, once it has stopped
// moving if wait, from views caught up with the log (caughtUpTo seen).
func (p *Plane) action(ctx context.Context, taskID, actionID string, wait bool, seen uint64) (*stewardv1.GetActionResponse, error) {
	if err := checkTaskID(taskID); err != nil {
		return nil, err
	}
	if actionID == "" {
		return nil, errs.Field("action_id", "is required")
	}
	if wait {
		// Subscribe before the first read, so that no change between the
		// read and the wait is missed.
		w, cancel := p.views.watchers.notify(taskID)
		defer cancel()
		if err := p.readTask(ctx, taskID, seen); err != nil {
			return nil, err
		}
		p.waitAction(ctx, w, taskID, actionID)
	} else if err := p.readTask(ctx, taskID, seen); err != nil {
		return nil, err
	}
	resp, err := p.viewAction(ctx, taskID, actionID)
	if err != nil {
		return nil, err
	}
	// A task gone from the views since (it broke) names nobody: its
	// result is hidden from all but who reads every task.
	self := func() parties { ps, _ := p.views.parties(taskID); return ps }
	if b := p.blind(rpc.Caller(ctx), self); b != nil {
		b.Action(taskID, resp.Action)
	}
	return resp, nil
}

// readTask returns once the views have caught up with the task's last
// event (caughtUpTo seen), or an error if they hold no view of it.
func (p *Plane) readTask(ctx context.Context, taskID string, seen uint64) error {
	if err := p.caughtUpTo(ctx, taskID, seen); err != nil {
		return err
	}
	if !p.views.Has(taskID) && seen != 0 {
		// Not a sequence of this task: the log says whether it has one.
		return p.readTask(ctx, taskID, 0)
	}
	if !p.views.Has(taskID) {
		return noView(taskID)
	}
	// Whether the action is there is the answer's to say (viewAction): a
	// wait for one the task does not have ends at once (moving).
	return nil
}

// viewAction is Projection.Action, read cold for an evicted task.
func (p *Plane) viewAction(ctx context.Context, taskID, actionID string) (resp *stewardv1.GetActionResponse, err error) {
	err = p.read(ctx, taskID, func(views *Projection) error {
		resp, err = views.Action(taskID, actionID)
		return err
	})
	return resp, err
}

// taskPages names ListTasks's page tokens, which no other list takes.
const taskPages = "tasks"

func (s *queryService) ListTasks(ctx context.Context, req *connect.Request[stewardv1.ListTasksRequest]) (*connect.Response[stewardv1.ListTasksResponse], error) {
	size, err := rpc.PageSize(req.Msg.PageSize, DefaultPageSize, MaxPageSize)
	if err != nil {
		return nil, err
	}
	filter, err := taskFilter(req.Msg)
	if err != nil {
		return nil, err
	}
	// Like a read of one task, a list shows what the caller just wrote.
	wctx, cancel := context.WithTimeout(ctx, freshnessWait)
	defer cancel()
	if err := eventlog.CatchUp(wctx, s.plane.views, s.plane.log.LastTaskSequence); err != nil {
		return nil, err
	}
	who := rpc.Caller(ctx)
	pages := filter.pages(req.Msg)
	after, err := rpc.DecodePageToken(pages, req.Msg.PageToken, s.plane.views.Len(who.Tenant))
	if err != nil {
		return nil, err
	}
	tasks, next := s.plane.views.List(who.Tenant, filter, after, size, MaxScan, rpc.MaxPageBytes, rpc.PageWeigher(req.Header()))
	for _, t := range tasks {
		if b := s.plane.blind(who, func() parties { return partiesOf(t) }); b != nil {
			b.Task(t)
		}
	}
	return connect.NewResponse(&stewardv1.ListTasksResponse{Tasks: tasks, NextPageToken: rpc.EncodePageToken(pages, next)}), nil
}

// WatchTask streams the task's events, past and then new, as stored: to
// who may read its content only (mayStream), as they carry its small
// results inline.
func (s *queryService) WatchTask(ctx context.Context, req *connect.Request[stewardv1.WatchTaskRequest], stream *connect.ServerStream[stewardv1.WatchTaskResponse]) error {
	taskID := req.Msg.TaskId
	if err := checkTaskID(taskID); err != nil {
		return err
	}
	if err := s.plane.mayStream(ctx, rpc.Caller(ctx), taskID); err != nil {
		return err
	}
	// Subscribe before reading the past, so that nothing applied in
	// between is missed; what arrives twice is dropped by sequence.
	w, cancel := s.plane.views.watchers.subscribe(taskID)
	defer cancel()
	last, err := s.plane.log.LastSequence(ctx, taskID)
	if err != nil {
		return err
	}
	if last == 0 {
		return errs.New(errs.NotFound, "task %s not found", taskID)
	}
	// Answer at once: stream headers go out with the first message, and a
	// client waiting for them must not wait for the task's next event.
	if err := stream.Send(&stewardv1.WatchTaskResponse{LastSequence: last}); err != nil {
		return err
	}
	// The past is read one event at a time as it is sent: a long history
	// is never in memory whole, and each message waits for its bytes of
	// the connection's budget.
	sent := req.Msg.AfterSequence
	if err := s.plane.log.EachAfter(ctx, taskID, sent, func(rec *stewardv1.EventRecord) error {
		if err := stream.Send(&stewardv1.WatchTaskResponse{Record: rec}); err != nil {
			return err
		}
		sent = rec.Sequence
		return nil
	}); err != nil {
		return err
	}
	for {
		select {
		case rec, ok := <-w.ch:
			if !ok {
				return errs.New(errs.Conflict, "the watch fell behind; reconnect with after_sequence %d", sent)
			}
			if rec.Sequence <= sent {
				continue
			}
			if err := stream.Send(&stewardv1.WatchTaskResponse{Record: rec}); err != nil {
				return err
			}
			sent = rec.Sequence
		case <-ctx.Done():
			return nil // the client left
		case <-s.plane.streams.Done():
			return nil // the server is stopping
		}
	}
}

func (s *queryService) GetTimeline(ctx context.Context, req *connect.Request[stewardv1.GetTimelineRequest]) (*connect.Response[stewardv1.GetTimelineResponse], error) {
	if err := checkTaskID(req.Msg.TaskId); err != nil {
		return nil, err
	}
	recs, err := s.plane.log.Read(ctx, req.Msg.TaskId)
	if err != nil {
		return nil, err
	}
	if len(recs) == 0 {
		return nil, errs.New(errs.NotFound, "task %s not found", req.Msg.TaskId)
	}
	return connect.NewResponse(&stewardv1.GetTimelineResponse{Entries: timeline(recs, s.plane.blindLog(rpc.Caller(ctx), req.Msg.TaskId))}), nil
}
