package state

import (
	"context"
	"slices"

	"github.com/steward-run/steward/pkg/task"
)

// archiveLooks bounds how many ended tasks one pass of the evictor asks
// the log about (a request each): the passes go round the views, so a
// task purged by the archiver leaves them within a few rounds without a
// pass ever costing a read per task.
const archiveLooks = 256

// archivedAway reports whether taskID's chain is gone from the log and
// the archive holds it: a task steward archive run purged. A failed read
// says no; the next round asks again.
func (p *Plane) archivedAway(ctx context.Context, taskID string) bool {
	if p.cfg.Archive == nil {
		return false
	}
	last, err := p.log.LastSequence(ctx, taskID)
	if err != nil || last != 0 {
		return false
	}
	_, err = p.cfg.Archive.Events(ctx, taskID)
	return err == nil
}

// dropArchived takes out of the views the ended tasks, of the next
// archiveLooks from the cursor on, that were archived and purged; it
// returns how many. The views then hold nothing of them: they read from
// the archive (history.go), like any task the log no longer holds.
func (p *Plane) dropArchived(ctx context.Context) int {
	if p.cfg.Archive == nil {
		return 0
	}
	ended, next := p.views.ended(p.archiveCursor, archiveLooks)
	p.archiveCursor = next
	var gone []string
	for id := range ended {
		if p.archivedAway(ctx, id) {
			gone = append(gone, id)
		}
	}
	return p.views.drop(gone, ended)
}

// ended returns the ended, unbroken tasks among the n positions of the
// creation order from from on, with the last sequence each view holds,
// and where the next look starts (0 past the end).
func (p *Projection) ended(from, n int) (map[string]uint64, int) {
	p.awaitStubs()
	p.mu.RLock()
	defer p.mu.RUnlock()
	if from >= len(p.order) {
		from = 0
	}
	out := map[string]uint64{}
	end := min(from+n, len(p.order))
	for _, id := range p.order[from:end] {
		v := p.tasks[id]
		if v != nil && p.broken[id] == "" && task.Terminal(v.task.Status) && len(v.pending) == 0 {
			out[id] = v.task.LastSequence
		}
	}
	if end == len(p.order) {
		end = 0
	}
	return out, end
}

// drop takes the tasks ids out of the views, each only if its view has
// not moved since it was looked at (at, its last sequence then; nil
// takes it as it is). A list keeps the place of a dropped task (a nil
// view in byTenant, an empty id in order), so that page tokens, which are
// positions, and a snapshot being written, which copies by position, go
// on where they were; the tree and an objective lose it (the archiver
// takes a tree whole, and no open objective's task). A sub-task whose
// parent stays in the views stays too. It returns how many it dropped.
func (p *Projection) drop(ids []string, at map[string]uint64) int {
	p.awaitStubs()
	if len(ids) == 0 {
		return 0
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	gone := map[*view]bool{}
	tenants := map[string]bool{}
	asked := map[string]bool{}
	for _, id := range ids {
		asked[id] = true
	}
	for _, id := range ids {
		v := p.tasks[id]
		if v == nil || len(v.pending) > 0 || at != nil && v.task.LastSequence != at[id] {
			continue
		}
		// A sub-task stays while its parent does: the parent's tree and
		// spend read it. The archiver takes a tree whole, so this holds
		// back only a sub-task whose parent a later look drops.
		if parent := v.task.GetContract().GetParentTaskId(); parent != "" && p.tasks[parent] != nil && !asked[parent] {
			continue
		}
		gone[v], tenants[v.task.Tenant] = true, true
		delete(p.tasks, id)
		delete(p.children, id)
		delete(p.foldedThrough, id)
		if parent := v.task.GetContract().GetParentTaskId(); parent != "" {
			p.children[parent] = without(p.children[parent], v)
		}
		if o := v.task.GetContract().GetObjectiveId(); o != "" {
			p.byObjective[o] = without(p.byObjective[o], v)
		}
	}
	for t := range tenants {
		for i, v := range p.byTenant[t] {
			if gone[v] {
				p.byTenant[t][i] = nil
			}
		}
	}
	for i, id := range p.order {
		if _, ok := p.tasks[id]; !ok {
			p.order[i] = ""
		}
	}
	return len(gone)
}

// without returns vs less v.
func without(vs []*view, v *view) []*view {
	return slices.DeleteFunc(vs, func(w *view) bool { return w == v })
}
