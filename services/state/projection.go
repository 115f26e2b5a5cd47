package state

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"

	"google.golang.org/protobuf/proto"

	"github.com/steward-run/steward/pkg/errs"
	"github.com/steward-run/steward/pkg/eventlog"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/rpc"
	"github.com/steward-run/steward/pkg/task"
)

// Projection holds the views of all tasks, folded from the log. It is safe
// for concurrent use: one goroutine applies, many read.
type Projection struct {
	logger *slog.Logger

	progress eventlog.Progress

	mu    sync.RWMutex
	tasks map[string]*view
	order []string // task ids by creation sequence
	// byTenant is order for each tenant: a page token is a position in
	// the caller's tenant's tasks alone, so that it counts no other
	// tenant's (stable paging, and nothing told across tenants). It
	// holds the views themselves: a list's scan looks up no id.
	byTenant map[string][]*view
	// rejected counts events the fold refused (illegal on the log).
	rejected int
	// broken names the tasks whose views stopped at a refused event, and
	// why: their views are stale and must not be served as current.
	broken map[string]string
	// refused counts each broken task's refused events (a snapshot
	// carries them with the task, viewsnap.go).
	refused map[string]int
	// foldedThrough is, after a start from a snapshot, how far each of
	// its tasks was folded, and skipUntil the furthest: Apply skips what
	// a view already holds (viewsnap.go).
	foldedThrough map[string]uint64
	skipUntil     uint64
	// children are each task's sub-tasks (parent_task_id), and
	// byObjective each objective's tasks (objective_id), in creation
	// order: the task tree and an objective's view without a scan.
	children    map[string][]*view
	byObjective map[string][]*view

	watchers watchers
	// thaw says an evicted task had an event: its view is to be folded
	// whole again (evict.go).
	thaw chan struct{}
	// stubsIn is closed once a snapshot's stubs are in the views, early
	// keeps the events of tasks the views do not hold until then, and
	// places are the snapshot's positions of the first tasks of order,
	// the ones loaded from it (stubs.go).
	stubsIn chan struct{}
	early   earlyEvents
	places  []uint64
}

// view is one task's view: the task folded in place, event by event (the
// fold changes only what an event touches, so applying an event does not
// copy the task), and where each action sits in its ledger, so that one
// action is found without a pass over the ledger.
type view struct {
	task *stewardv1.Task
	// at maps an action id to its index in task.Actions. The ledger only
	// grows, in order of proposal, and entries keep their place.
	at map[string]int
	// recoveries are the task's recovery times (see recovery.go).
	recoveries recoveries
	// answered says a person answered a question of the task's
	// (InputProvided), which the task itself does not keep once closed.
	answered bool
	// tools names the tools of the task's actions, for ListTasks's tool
	// filter without a pass over the ledger; nil until the first action.
	tools map[string]struct{}
	// spent is what the task spent itself, its reservations for
	// sub-tasks and forks left out (noteSpend).
	spent spend
	// cold says the task was evicted: task is its stub, and its whole
	// view is read from ColdTasks (evict.go); pending are its events
	// since, folded when it is revived.
	cold    bool
	pending []*stewardv1.EventRecord
}

// index records the actions the last event added to the ledger.
func (v *view) index() {
	for i := len(v.at); i < len(v.task.Actions); i++ {
		v.at[v.task.Actions[i].ActionId] = i
		if v.tools == nil {
			v.tools = map[string]struct{}{}
		}
		v.tools[v.task.Actions[i].Tool] = struct{}{}
	}
}

// NewProjection returns an empty projection.
func NewProjection(logger *slog.Logger) *Projection {
	return &Projection{logger: logger, tasks: map[string]*view{}, broken: map[string]string{}, refused: map[string]int{}, byTenant: map[string][]*view{},
		children: map[string][]*view{}, byObjective: map[string][]*view{}, thaw: make(chan struct{}, 1), stubsIn: closedGate()}
}

// Apply folds one record into its task's view. It never fails: an event the
// fold refuses is a malformed event on the log, reported and skipped so one
// bad event cannot stop every view.
func (p *Projection) Apply(rec *stewardv1.EventRecord) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	id := rec.Event.TaskId
	if p.folded(rec) {
		p.progress.Advance(rec.Sequence)
		return nil
	}
	if v, ok := p.tasks[id]; ok {
		p.applyHeld(v, rec)
	} else if !p.early.keep(rec) {
		p.applyTask(rec)
	}
	p.progress.Advance(rec.Sequence)
	p.watchers.publish(rec)
	return nil
}

// applyHeld folds rec into v, a view the projection holds: an evicted
// one takes it as its thaw's. The caller holds p.mu.
func (p *Projection) applyHeld(v *view, rec *stewardv1.EventRecord) {
	if v.cold {
		p.applyCold(v, rec)
		return
	}
	p.applyTo(v, rec)
}

// applyTask folds rec, the first event of a task the projection does not
// hold, into a new view, which joins the lists if the fold took it. The
// caller holds p.mu.
func (p *Projection) applyTask(rec *stewardv1.EventRecord) {
	v := &view{task: &stewardv1.Task{}, at: map[string]int{}}
	if p.applyTo(v, rec) {
		id := rec.Event.TaskId
		p.tasks[id] = v
		p.order = append(p.order, id)
		p.byTenant[v.task.Tenant] = append(p.byTenant[v.task.Tenant], v)
		p.relate(v)
	}
}

// newerMark starts the reason a task's view is withheld when it holds an
// event of a newer build: not corrupt, only not this build's to fold.
const newerMark = "newer: "

// applyTo folds rec into v, and reports whether the fold took it; the
// caller holds p.mu.
func (p *Projection) applyTo(v *view, rec *stewardv1.EventRecord) bool {
	id := rec.Event.TaskId
	actionID, before := v.statusBefore(rec.Event)
	if err := task.Apply(v.task, rec.Event, rec.Sequence); err != nil {
		p.rejected++
		p.refused[id]++
		if _, seen := p.broken[id]; !seen {
			p.broken[id] = fmt.Sprintf("event %d (%s) was refused: %v", rec.Sequence, rec.Event.EventId, err)
		}
		p.logger.Error("event refused by the fold; view not updated", "task", id, "seq", rec.Sequence, "type", rec.Event.Type, "err", err)
		return false
	}
	v.index()
	v.noteRecovery(rec.Event, actionID, before)
	v.answered = v.answered || rec.Event.GetInputProvided() != nil
	v.noteSpend(rec.Event)
	return true
}

// Skip notes an event that could not be decoded (the log has set it aside).
func (p *Projection) Skip(seq uint64, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.rejected++
	// A newer build's event: the task's view stops before it, withheld
	// like a broken one's, for a newer state plane to serve.
	var newer *eventlog.NewerEvent
	if errors.As(err, &newer) {
		if _, seen := p.broken[newer.TaskID]; !seen {
			p.broken[newer.TaskID] = newerMark + newer.Error()
		}
	}
	// Under the lock, as in Apply: a snapshot's header reads the count
	// and the progress together, and must not count an event past the
	// sequence it covers (the start after it would count it again).
	p.progress.Advance(seq)
}

// Progress says how far the projection has applied the log.
func (p *Projection) Progress() *eventlog.Progress { return &p.progress }

// Rejected returns how many events were refused or undecodable.
func (p *Projection) Rejected() int {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.rejected
}

// WaitFor blocks until the projection has applied seq or ctx ends.
func (p *Projection) WaitFor(ctx context.Context, seq uint64) error {
	return p.progress.WaitFor(ctx, seq)
}

// Get returns a copy of the task's view. A task whose history holds an
// event the fold refused has no current view: Get returns a Corrupt error
// naming the event.
func (p *Projection) Get(taskID string) (*stewardv1.Task, error) {
	p.awaitStubOf(taskID)
	p.mu.RLock()
	defer p.mu.RUnlock()
	v, err := p.whole(taskID)
	if err != nil {
		return nil, err
	}
	return proto.CloneOf(v.task), nil
}

// lookup returns the task's view, or why there is none; the caller holds
// p.mu.
func (p *Projection) lookup(taskID string) (*view, error) {
	if why, ok := p.broken[taskID]; ok {
		if newer, ok := strings.CutPrefix(why, newerMark); ok {
			return nil, errs.New(errs.Unavailable, "%s; a newer state plane serves it", newer)
		}
		return nil, errs.New(errs.Corrupt, "task %s: %s; run VerifyTask", taskID, why)
	}
	v, ok := p.tasks[taskID]
	if !ok {
		return nil, errs.New(errs.NotFound, "task %s not found", taskID)
	}
	return v, nil
}

// whole returns the task's whole view, or why there is none: an evicted
// task's is read cold (evicted); the caller holds p.mu.
func (p *Projection) whole(taskID string) (*view, error) {
	v, err := p.lookup(taskID)
	if err == nil && v.cold {
		return nil, evicted{taskID}
	}
	return v, err
}

// Has reports whether the projection holds a view of the task, broken or
// not.
func (p *Projection) Has(taskID string) bool {
	p.awaitStubOf(taskID)
	p.mu.RLock()
	defer p.mu.RUnlock()
	_, ok := p.tasks[taskID]
	_, broken := p.broken[taskID]
	return ok || broken
}

// Action returns a copy of one action of the task's view, with the task's
// status, reason and last sequence. It copies that action only, so its
// cost does not grow with the task's ledger. Errors as Get, and NotFound
// for an action the task does not have.
func (p *Projection) Action(taskID, actionID string) (*stewardv1.GetActionResponse, error) {
	p.awaitStubOf(taskID)
	p.mu.RLock()
	defer p.mu.RUnlock()
	v, err := p.whole(taskID)
	if err != nil {
		return nil, err
	}
	i, ok := v.at[actionID]
	if !ok {
		return nil, errs.New(errs.NotFound, "task %s has no action %s", taskID, errs.Quote(actionID))
	}
	t := v.task
	return &stewardv1.GetActionResponse{
		Action:           proto.CloneOf(t.Actions[i]),
		TaskStatus:       t.Status,
		TaskStatusReason: t.StatusReason,
		LastSequence:     t.LastSequence,
	}, nil
}

// moving reports whether Steward is still moving the action on by itself
// (task.Moving); a broken task's or an unknown action is not.
func (p *Projection) moving(taskID, actionID string) bool {
	p.awaitStubOf(taskID)
	p.mu.RLock()
	defer p.mu.RUnlock()
	v, ok := p.tasks[taskID]
	if !ok || p.broken[taskID] != "" {
		return false
	}
	i, ok := v.at[actionID]
	if !ok {
		return false
	}
	return task.Moving(v.task, v.task.Actions[i])
}

// List returns the summaries (task.Summary) of up to limit tasks of tenant
// created after position after (0 for the start) that match f, in
// creation order, no more than maxBytes of them as weigh weighs them (at
// least one), and the position to continue from (0 when there is no
// more). It examines at most scan tasks: a filter that matches few pays
// for scan of them per call, not for the whole list, and the page may be
// short or empty with a position to continue from. Another tenant's tasks
// are not there at all (docs/tenants.md).
func (p *Projection) List(tenant string, f TaskFilter, after, limit, scan, maxBytes int, weigh rpc.Weigher) ([]*stewardv1.Task, int) {
	p.awaitStubs()
	p.mu.RLock()
	defer p.mu.RUnlock()
	var out []*stewardv1.Task
	bytes := 0
	order := p.byTenant[tenant]
	for i := after; i < len(order); i++ {
		if i-after == scan {
			return out, i
		}
		v := order[i]
		if v == nil || !f.match(v) { // nil: a task that left the views (drop)
			continue
		}
		if len(out) == limit {
			return out, i
		}
		s := task.Summary(v.task)
		n := weigh(s)
		if len(out) > 0 && bytes+n > maxBytes {
			return out, i
		}
		bytes += n
		out = append(out, s)
	}
	return out, 0
}

// Len returns how many tasks tenant has had: the end of its list, past
// which no page token points.
func (p *Projection) Len(tenant string) int {
	p.awaitStubs()
	p.mu.RLock()
	defer p.mu.RUnlock()
	return len(p.byTenant[tenant])
}

// Size returns the protobuf size of the task's view without copying it:
// what a whole task will weigh, known before it is built. Errors as Get.
func (p *Projection) Size(taskID string) (int, error) {
	p.awaitStubOf(taskID)
	p.mu.RLock()
	defer p.mu.RUnlock()
	v, err := p.whole(taskID)
	if err != nil {
		return 0, err
	}
	return proto.Size(v.task), nil
}

// Snapshot returns copies of every view, keyed by task id: for comparing a
// rebuilt projection with a live one.
func (p *Projection) Snapshot() map[string]*stewardv1.Task {
	p.awaitStubs()
	p.mu.RLock()
	defer p.mu.RUnlock()
	out := make(map[string]*stewardv1.Task, len(p.tasks))
	for id, v := range p.tasks {
		out[id] = proto.CloneOf(v.task)
	}
	return out
}
