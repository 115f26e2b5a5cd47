package state

import (
	"cmp"
	"slices"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// A snapshot of format 3 keeps the evicted tasks' stubs in a part of its
// own, and a plane starts serving before it has read them: with the
// first part and the log after it folded, every running task is whole,
// and what is left, the stubs of ended tasks, grows with the history,
// which a start must not (docs/snapshots.md). Until they are in,
//   - a read of one task the views do not hold waits for them (it may be
//     one of them), and a read of the lists, the tree, an objective, the
//     metrics, an eviction, a drop or a snapshot waits whatever it is;
//   - the fold keeps an event of a task it does not hold, unless it
//     creates one, for when they are in (early): it may be a stub's.

// awaitStubs waits until the snapshot's stubs are in the views, if the
// plane started from one that has them. The caller must not hold p.mu.
func (p *Projection) awaitStubs() {
	p.mu.RLock()
	in := p.stubsIn
	p.mu.RUnlock()
	<-in
}

// awaitStubOf waits for the snapshot's stubs unless the views hold
// taskID already. The caller must not hold p.mu.
func (p *Projection) awaitStubOf(taskID string) {
	p.mu.RLock()
	in := p.stubsIn
	_, held := p.tasks[taskID]
	_, broken := p.broken[taskID]
	p.mu.RUnlock()
	if !held && !broken {
		<-in
	}
}

// closedGate is the gate of a projection with no stubs to wait for.
func closedGate() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}

// expectStubs makes the projection, just loaded from a snapshot, wait
// for its stubs (installStubs or installFolded).
func (p *Projection) expectStubs() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stubsIn = make(chan struct{})
	p.early = earlyEvents{}
}

// earlyEvents are the events of tasks the views do not hold while a
// snapshot's stubs load, by task; nil when none are loading.
type earlyEvents map[string][]*stewardv1.EventRecord

// keep keeps rec for installStubs, and reports whether it did: an event
// that creates a task is the fold's at once.
func (e earlyEvents) keep(rec *stewardv1.EventRecord) bool {
	if e == nil || rec.Event.GetTaskCreated() != nil {
		return false
	}
	e[rec.Event.TaskId] = append(e[rec.Event.TaskId], rec)
	return true
}

// installStubs puts the snapshot's stubs (but those of gone, archived
// away since) in their places in the lists, hands each the events the
// fold kept for it, and lets the reads waiting for them go on.
func (p *Projection) installStubs(entries []*stewardv1.TaskViewSnapshot, covered uint64, gone []string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	var placed []placedView
	for _, e := range entries {
		if _, held := p.tasks[e.TaskId]; held || slices.Contains(gone, e.TaskId) {
			continue
		}
		v := p.place(e, covered)
		if v == nil {
			continue
		}
		for _, rec := range p.early[e.TaskId] {
			if rec.Sequence > e.FoldedThrough {
				p.applyHeld(v, rec)
			}
		}
		delete(p.early, e.TaskId)
		placed = append(placed, placedView{e.TaskId, e.Position})
	}
	p.settle(interleave(p.order, p.places, placed))
}

// placedView is a stub's task and its place in the snapshot's order.
type placedView struct {
	id       string
	position uint64
}

// interleave returns order, whose first tasks are those loaded from the
// snapshot's first part at places, with the tasks of placed in among
// them by the places the snapshot gave them all, and the tasks created
// since after them.
func interleave(order []string, places []uint64, placed []placedView) []string {
	loaded := make([]placedView, len(places))
	for i, at := range places {
		loaded[i] = placedView{order[i], at}
	}
	slices.SortStableFunc(placed, func(a, b placedView) int { return cmp.Compare(a.position, b.position) })
	out := make([]string, 0, len(order)+len(placed))
	for len(loaded) > 0 || len(placed) > 0 {
		if len(placed) == 0 || len(loaded) > 0 && loaded[0].position <= placed[0].position {
			out, loaded = append(out, loaded[0].id), loaded[1:]
		} else {
			out, placed = append(out, placed[0].id), placed[1:]
		}
	}
	return append(out, order[len(places):]...)
}

// settle makes order the projection's creation order and builds the
// tenants' lists, the tree and the objectives from it; then it folds the
// events kept for tasks that turned out to be no stub's, as the fold
// would have (the first of them is refused: it does not create the
// task), and lets the reads waiting for the stubs go on. The caller
// holds p.mu.
func (p *Projection) settle(order []string) {
	p.order, p.places = order, nil
	clear(p.byTenant)
	clear(p.children)
	clear(p.byObjective)
	for _, id := range order {
		if v := p.tasks[id]; v != nil {
			p.byTenant[v.task.Tenant] = append(p.byTenant[v.task.Tenant], v)
			p.relate(v)
		}
	}
	early := p.early
	p.early = nil
	ids := make([]string, 0, len(early))
	for id := range early {
		ids = append(ids, id)
	}
	slices.SortFunc(ids, func(a, b string) int { return cmp.Compare(early[a][0].Sequence, early[b][0].Sequence) })
	for _, id := range ids {
		for _, rec := range early[id] {
			p.applyTask(rec)
		}
	}
	close(p.stubsIn)
}

// installFolded is installStubs from back, a projection folded from the
// log up to the snapshot's covered sequence, for a plane whose stubs part
// could not be read: every task it lacks is taken from back, in back's
// order, with the events kept for it since. The caller holds no lock on
// back, which nothing else uses.
func (p *Projection) installFolded(back *Projection) {
	p.mu.Lock()
	defer p.mu.Unlock()
	order := make([]string, 0, len(back.order)+len(p.order))
	seen := make(map[string]bool, len(back.order))
	for _, id := range back.order {
		seen[id] = true
		order = append(order, id)
		if _, held := p.tasks[id]; held {
			continue
		}
		v := back.tasks[id]
		p.tasks[id] = v
		for _, rec := range p.early[id] {
			p.applyHeld(v, rec)
		}
		delete(p.early, id)
	}
	for id, why := range back.broken {
		if _, held := p.broken[id]; !held {
			p.broken[id], p.refused[id] = why, back.refused[id]
			p.rejected += back.refused[id]
		}
	}
	for _, id := range p.order {
		if id != "" && !seen[id] {
			order = append(order, id)
		}
	}
	p.settle(order)
}
