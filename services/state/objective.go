package state

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/proto"

	"github.com/steward-run/steward/pkg/errs"
	"github.com/steward-run/steward/pkg/event"
	"github.com/steward-run/steward/pkg/eventlog"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/objective"
	"github.com/steward-run/steward/pkg/rpc"
	"github.com/steward-run/steward/pkg/task"
)

// objectiveTypes are the events an objective's chain holds.
var objectiveTypes = []string{event.TypeObjectiveCreated, event.TypeObjectiveClosed, event.TypeObjectiveTaskAdded}

// Objectives holds every objective folded from the log (pkg/objective), as
// Projection holds the tasks. It is safe for concurrent use: one
// goroutine applies, many read.
type Objectives struct {
	logger   *slog.Logger
	progress eventlog.Progress

	mu       sync.RWMutex
	byID     map[string]*stewardv1.Objective
	byTenant map[string][]*stewardv1.Objective
	// reserved are the tasks each objective reserved budget for, in order.
	reserved map[string][]string
	// broken names the objectives whose views stopped at a refused event.
	broken map[string]string
}

// NewObjectives returns an empty projection of objectives.
func NewObjectives(logger *slog.Logger) *Objectives {
	return &Objectives{logger: logger, byID: map[string]*stewardv1.Objective{}, byTenant: map[string][]*stewardv1.Objective{},
		reserved: map[string][]string{}, broken: map[string]string{}}
}

// Apply folds one record into its objective; an event the fold refuses is
// reported and leaves the objective's view stale, as for a task.
func (o *Objectives) Apply(rec *stewardv1.EventRecord) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	id := rec.Event.TaskId
	ob, ok := o.byID[id]
	if !ok {
		ob = &stewardv1.Objective{}
	}
	if err := objective.Apply(ob, rec.Event, rec.Sequence); err != nil {
		if _, seen := o.broken[id]; !seen {
			o.broken[id] = fmt.Sprintf("event %d (%s) was refused: %v", rec.Sequence, rec.Event.EventId, err)
		}
		o.logger.Error("objective event refused by the fold; view not updated", "objective", id, "seq", rec.Sequence, "err", err)
	} else {
		if !ok {
			o.byID[id] = ob
			o.byTenant[ob.Tenant] = append(o.byTenant[ob.Tenant], ob)
		}
		if a := rec.Event.GetObjectiveTaskAdded(); a != nil {
			o.reserved[id] = append(o.reserved[id], a.TaskId)
		}
	}
	o.progress.Advance(rec.Sequence)
	return nil
}

// Skip notes an event that could not be decoded.
func (o *Objectives) Skip(seq uint64, _ error) { o.progress.Advance(seq) }

// Progress says how far the projection has applied the log.
func (o *Objectives) Progress() *eventlog.Progress { return &o.progress }

// get returns a copy of objective id as tenant sees it, and the tasks it
// reserved for: another tenant's, or none, is NotFound in the same words.
func (o *Objectives) get(tenant, id string) (*stewardv1.Objective, []string, error) {
	o.mu.RLock()
	defer o.mu.RUnlock()
	ob, ok := o.byID[id]
	switch {
	case !ok || ob.Tenant != tenant:
		return nil, nil, errs.New(errs.NotFound, "objective %s not found", id)
	case o.broken[id] != "":
		return nil, nil, errs.New(errs.Corrupt, "objective %s: %s", id, o.broken[id])
	}
	return proto.CloneOf(ob), slices.Clone(o.reserved[id]), nil
}

// list returns copies of up to limit of tenant's objectives from position
// after on in one of statuses (all when empty), and the position to go on
// from (0 at the end).
func (o *Objectives) list(tenant string, statuses []stewardv1.ObjectiveStatus, after, limit int) ([]*stewardv1.Objective, int) {
	o.mu.RLock()
	defer o.mu.RUnlock()
	var out []*stewardv1.Objective
	all := o.byTenant[tenant]
	for i := after; i < len(all); i++ {
		if len(statuses) > 0 && !slices.Contains(statuses, all[i].Status) {
			continue
		}
		if len(out) == limit {
			return out, i
		}
		out = append(out, proto.CloneOf(all[i]))
	}
	return out, 0
}

func (o *Objectives) count(tenant string) int {
	o.mu.RLock()
	defer o.mu.RUnlock()
	return len(o.byTenant[tenant])
}

// ObjectiveTasks returns the progress of objective id's tasks, counted
// over all of them, and the summaries of up to limit of them from
// position after on, with the position to go on from (0 at the end).
// reserved are the tasks the objective reserved budget for.
func (p *Projection) ObjectiveTasks(id string, reserved []string, after, limit int) (*stewardv1.ObjectiveProgress, []*stewardv1.Task, int) {
	p.awaitStubs()
	p.mu.RLock()
	defer p.mu.RUnlock()
	prog := &stewardv1.ObjectiveProgress{}
	counts := map[stewardv1.TaskStatus]uint32{}
	all := p.byObjective[id]
	for _, v := range all {
		prog.Tasks++
		counts[v.task.Status]++
		prog.SpentTokens += v.spent.tokens
		prog.SpentCostMicros += v.spent.cost
		if v.task.Status == stewardv1.TaskStatus_TASK_STATUS_ACCEPTED {
			prog.Accepted++
		}
	}
	for s := range stewardv1.TaskStatus_name {
		if n := counts[stewardv1.TaskStatus(s)]; n > 0 {
			prog.Statuses = append(prog.Statuses, &stewardv1.ObjectiveStatusCount{Status: stewardv1.TaskStatus(s), Count: n})
		}
	}
	slices.SortFunc(prog.Statuses, func(a, b *stewardv1.ObjectiveStatusCount) int { return int(a.Status) - int(b.Status) })
	for _, taskID := range reserved {
		if _, ok := p.tasks[taskID]; !ok {
			prog.ReservationsWithoutTask++
		}
	}
	var page []*stewardv1.Task
	next := 0
	for i := after; i < len(all); i++ {
		if len(page) == limit {
			next = i
			break
		}
		page = append(page, task.Summary(all[i].task))
	}
	return prog, page, next
}

// objectiveTaskCount is how many tasks name objective id.
func (p *Projection) objectiveTaskCount(id string) int {
	p.awaitStubs()
	p.mu.RLock()
	defer p.mu.RUnlock()
	return len(p.byObjective[id])
}

// caughtUpObjectives returns once the objectives and the tasks are
// projected up to the log as it is now: a caller reads its writes.
func (p *Plane) caughtUpObjectives(ctx context.Context) error {
	wctx, cancel := context.WithTimeout(ctx, freshnessWait)
	defer cancel()
	last := func(ctx context.Context) (uint64, error) { return p.log.LastOfTypes(ctx, objectiveTypes...) }
	if err := eventlog.CatchUp(wctx, p.objectives, last); err != nil {
		return err
	}
	return eventlog.CatchUp(wctx, p.views, p.log.LastTaskSequence)
}

// GetObjective serves an objective of the caller's tenant with its tasks
// taken together, and a page of them as ListTasks's summaries.
func (s *queryService) GetObjective(ctx context.Context, req *connect.Request[stewardv1.GetObjectiveRequest]) (*connect.Response[stewardv1.GetObjectiveResponse], error) {
	id := req.Msg.ObjectiveId
	switch {
	case id == "":
		return nil, errs.Field("objective_id", "is required")
	case !eventlog.ValidTaskID(id):
		return nil, errs.Field("objective_id", "%s is not an objective id: "+eventlog.TaskIDRule, errs.Quote(id))
	}
	size, err := rpc.PageSize(req.Msg.PageSize, DefaultPageSize, MaxPageSize)
	if err != nil {
		return nil, err
	}
	if err := s.plane.caughtUpObjectives(ctx); err != nil {
		return nil, err
	}
	who := rpc.Caller(ctx)
	ob, reserved, err := s.plane.objectives.get(who.Tenant, id)
	if err != nil {
		return nil, err
	}
	pages := "objective~" + id
	after, err := rpc.DecodePageToken(pages, req.Msg.PageToken, s.plane.views.objectiveTaskCount(id))
	if err != nil {
		return nil, err
	}
	prog, tasks, next := s.plane.views.ObjectiveTasks(id, reserved, after, size)
	for _, t := range tasks {
		if b := s.plane.blind(who, func() parties { return partiesOf(t) }); b != nil {
			b.Task(t)
		}
	}
	return connect.NewResponse(&stewardv1.GetObjectiveResponse{Objective: ob, Progress: prog, Tasks: tasks, NextPageToken: rpc.EncodePageToken(pages, next)}), nil
}

// ListObjectives serves the caller's tenant's objectives, paged.
func (s *queryService) ListObjectives(ctx context.Context, req *connect.Request[stewardv1.ListObjectivesRequest]) (*connect.Response[stewardv1.ListObjectivesResponse], error) {
	size, err := rpc.PageSize(req.Msg.PageSize, DefaultPageSize, MaxPageSize)
	if err != nil {
		return nil, err
	}
	for i, st := range req.Msg.Statuses {
		if _, ok := stewardv1.ObjectiveStatus_name[int32(st)]; !ok || st == stewardv1.ObjectiveStatus_OBJECTIVE_STATUS_UNSPECIFIED {
			return nil, errs.Field(fmt.Sprintf("statuses[%d]", i), "%d is not an objective status", st)
		}
	}
	if err := s.plane.caughtUpObjectives(ctx); err != nil {
		return nil, err
	}
	tenant := rpc.Caller(ctx).Tenant
	pages := "objectives"
	if len(req.Msg.Statuses) > 0 {
		pages = fmt.Sprintf("objectives~%v", req.Msg.Statuses)
	}
	after, err := rpc.DecodePageToken(pages, req.Msg.PageToken, s.plane.objectives.count(tenant))
	if err != nil {
		return nil, err
	}
	list, next := s.plane.objectives.list(tenant, req.Msg.Statuses, after, size)
	return connect.NewResponse(&stewardv1.ListObjectivesResponse{Objectives: list, NextPageToken: rpc.EncodePageToken(pages, next)}), nil
}
