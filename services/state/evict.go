package state

import (
	"context"
	"errors"
	"math"
	"time"

	"github.com/steward-run/steward/pkg/eventlog"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/task"
)

// DefaultEvictAfter is how long an ended task keeps its whole view in
// memory after its last event (Config.EvictAfter).
const DefaultEvictAfter = time.Hour

// ColdTasks reads from the log the history of a task the views no longer
// hold whole (an ended one, evicted after Config.EvictAfter), for the read
// that asks for it; Plane.history, the one path for such reads, asks the
// archive for a task it returns none of. Events returns the task's
// records in order, none for a task it does not know.
type ColdTasks interface {
	Events(ctx context.Context, tenant, taskID string) ([]*stewardv1.EventRecord, error)
}

// maxColdReads bounds the cold histories a plane folds at once, each a
// whole task's in memory: callers past it wait their turn, so reads of
// evicted tasks cannot have the plane hold any number of histories.
const maxColdReads = 4

// logCold reads a cold task's history from the log.
type logCold struct{ log *eventlog.Log }

func (c logCold) Events(ctx context.Context, _, taskID string) ([]*stewardv1.EventRecord, error) {
	return c.log.Read(ctx, taskID)
}

// evicted is the error of a read of the whole view of a task the views
// keep only its summary of: the plane reads it cold (Plane.read).
type evicted struct{ taskID string }

func (e evicted) Error() string { return "task " + e.taskID + " was evicted from the views" }

// stub is what an evicted task keeps in memory: its summary (what
// ListTasks, the task tree and an objective show of it, and what the
// metrics count), with its decisions' flags alone, which the metrics
// count too. task.Summary of the stub is task.Summary of the task.
func stub(t *stewardv1.Task) *stewardv1.Task {
	s := task.Summary(t)
	for _, d := range t.Decisions {
		if len(d.Flags) > 0 {
			s.Decisions = append(s.Decisions, &stewardv1.Decision{Flags: d.Flags})
		}
	}
	return s
}

// evictable reports whether v may leave the views whole at now: its task
// ended (no event can move it on) before cutoff.
func (v *view) evictable(cutoff time.Time) bool {
	t := v.task
	return !v.cold && task.Terminal(t.Status) && t.UpdatedAt != nil && t.UpdatedAt.AsTime().Before(cutoff)
}

// evict keeps only v's stub.
func (v *view) evict() {
	v.task = stub(v.task)
	v.cold = true
	v.at = nil
	v.recoveries.unknownSince = nil
	v.recoveries.stalledAt = time.Time{}
}

// Evict replaces the views of the tasks that ended before cutoff by their
// stubs, and returns how many it evicted. It looks under the read lock
// and evicts a batch at a time under the write lock, so the fold waits
// for one batch at most.
func (p *Projection) Evict(cutoff time.Time) int {
	p.awaitStubs()
	p.mu.RLock()
	var due []*view
	for _, id := range p.order {
		if v := p.tasks[id]; v != nil && p.broken[id] == "" && v.evictable(cutoff) {
			due = append(due, v)
		}
	}
	p.mu.RUnlock()
	for i := 0; i < len(due); i += snapshotBatch {
		p.mu.Lock()
		for _, v := range due[i:min(i+snapshotBatch, len(due))] {
			if v.evictable(cutoff) && p.broken[v.task.Contract.GetTaskId()] == "" {
				v.evict()
			}
		}
		p.mu.Unlock()
	}
	return len(due)
}

// Evicted reports whether the views keep only the task's stub.
func (p *Projection) Evicted(taskID string) bool {
	p.awaitStubOf(taskID)
	p.mu.RLock()
	defer p.mu.RUnlock()
	v, ok := p.tasks[taskID]
	return ok && v.cold
}

// applyCold takes an event of an evicted task: the stub cannot fold it,
// so the task is thawed (revive) and the event kept for it until then;
// the caller holds p.mu.
func (p *Projection) applyCold(v *view, rec *stewardv1.EventRecord) {
	v.pending = append(v.pending, rec)
	select {
	case p.thaw <- struct{}{}:
	default: // one is due already
	}
}

// pendingSince marks the loaded stub v as moved if its entry says events
// came for it that it could not fold (folded_through short of the
// snapshot's covered sequence, entry): the replay starts after covered,
// so they are not applied again, and only a revival folds them, through
// covered (the mark is a record of that sequence alone). The caller
// holds p.mu.
func (p *Projection) pendingSince(v *view, e *stewardv1.TaskViewSnapshot, covered uint64) {
	if e.FoldedThrough < covered {
		p.applyCold(v, &stewardv1.EventRecord{Sequence: covered})
	}
}

// revive puts back the whole views of the evicted tasks that had an
// event since, folded from cold no further than the projection has
// applied of each: the log may already hold the task's next event, which
// the fold then applies to the view as to any (else it would not link,
// and the task would break). It reports whether any is left to revive (a
// cold read failed).
func (p *Plane) revive(ctx context.Context) (left bool) {
	p.views.mu.RLock()
	due := map[string]uint64{}
	for id, v := range p.views.tasks {
		if v.cold && len(v.pending) > 0 {
			due[id] = v.task.LastSequence
			for _, rec := range v.pending {
				due[id] = max(due[id], rec.Sequence)
			}
		}
	}
	p.views.mu.RUnlock()
	for id, through := range due {
		thawed, err := p.thawedThrough(ctx, id, through)
		if err == nil && !p.views.revived(id, thawed, through) {
			err = errors.New("its history read cold ends before its stub")
		}
		if err != nil {
			p.logger.Warn("could not revive an evicted task's view", "task", id, "err", err)
			left = true
		}
	}
	return left
}

// revived replaces the stub of taskID by its view in thawed, folded from
// cold through sequence through, with what came since folded too; what
// that fold refused is counted as the projection's. It reports false,
// keeping the stub, for a view in thawed older than the stub: the view
// never goes back.
func (p *Projection) revived(taskID string, thawed *Projection, through uint64) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	v, ok := p.tasks[taskID]
	w := thawed.tasks[taskID]
	if !ok || !v.cold {
		return true // revived already
	}
	if w == nil || w.task.LastSequence < v.task.LastSequence {
		return false
	}
	if why := thawed.broken[taskID]; why != "" {
		p.broken[taskID] = why
		p.refused[taskID] += thawed.refused[taskID]
		p.rejected += thawed.rejected
	}
	pending := v.pending
	*v = *w // in place: the tenant's list, the tree and the objective hold v
	for _, rec := range pending {
		if rec.Sequence > through {
			p.applyTo(v, rec)
		}
	}
	return true
}

// thawed returns a projection of taskID alone, folded from its cold
// history.
func (p *Plane) thawed(ctx context.Context, taskID string) (*Projection, error) {
	return p.thawedThrough(ctx, taskID, math.MaxUint64)
}

// thawedThrough is thawed, folded no further than sequence through.
func (p *Plane) thawedThrough(ctx context.Context, taskID string, through uint64) (*Projection, error) {
	select {
	case p.coldReads <- struct{}{}:
		defer func() { <-p.coldReads }()
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	recs, _, err := p.history(ctx, taskID)
	if err != nil {
		return nil, err
	}
	one := NewProjection(p.logger)
	for _, rec := range recs {
		if rec.Sequence > through {
			break
		}
		_ = one.Apply(rec) // never fails; a refusal marks the task broken
	}
	return one, nil
}

// read runs fn over the projection holding taskID's whole view: the
// plane's, or for an evicted task one folded from its cold history for
// this read alone.
func (p *Plane) read(ctx context.Context, taskID string, fn func(*Projection) error) error {
	err := fn(p.views)
	if !errors.As(err, new(evicted)) {
		return err
	}
	thawed, err := p.thawed(ctx, taskID)
	if err != nil {
		return err
	}
	return fn(thawed)
}

// keepEvicting evicts the tasks ended EvictAfter ago, every
// StallCheckEvery, drops those archived and purged (dropArchived), and
// revives at once an evicted task that moves again,
// or at the next look if its cold read failed. It runs with eviction off
// too: a snapshot may hold stubs, which an event must still revive.
func (p *Plane) keepEvicting(ctx context.Context) {
	tick := time.NewTicker(p.cfg.StallCheckEvery)
	defer tick.Stop()
	left := false
	for {
		select {
		case <-ctx.Done():
			return
		case <-p.views.thaw:
			left = p.revive(ctx)
		case <-tick.C:
			if left {
				left = p.revive(ctx)
			}
			if n := p.dropArchived(ctx); n > 0 {
				p.logger.Info("archived tasks left the views", "tasks", n)
			}
			if p.cfg.EvictAfter <= 0 {
				continue
			}
			if n := p.views.Evict(p.cfg.Now().Add(-p.cfg.EvictAfter)); n > 0 {
				p.logger.Debug("evicted ended tasks from the views", "tasks", n)
			}
			p.evictions.Add(1)
		}
	}
}
