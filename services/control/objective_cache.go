package control

import (
	"context"
	"sync"

	"google.golang.org/protobuf/proto"

	"github.com/steward-run/steward/pkg/errs"
	"github.com/steward-run/steward/pkg/eventlog"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/objective"
)

// maxCachedObjectives bounds the objectives the cache keeps folded; past
// it the cache starts over, and the next read of each folds it anew.
const maxCachedObjectives = 4096

// objectiveCache keeps objectives folded, so that a CreateTask naming one
// reads only the events appended since it was last read, not its whole
// chain, which grows by one event per task. A cached objective may be
// behind the log: that is never a decision's last word, since every write
// on an objective is conditional on the head it was folded at, and one
// that finds the chain moved on reads again. It is safe for concurrent
// use.
type objectiveCache struct {
	log *eventlog.Log

	mu sync.Mutex
	// heads are the objectives folded so far, never changed once here.
	heads map[string]*stewardv1.Objective
	// tasks are the tasks each objective reserved budget for, and what
	// it reserved, as far as its head: a task in it was reserved for,
	// whatever head is read.
	tasks map[string]map[string]*stewardv1.ObjectiveTaskAdded
}

func newObjectiveCache(log *eventlog.Log) *objectiveCache {
	return &objectiveCache{log: log, heads: map[string]*stewardv1.Objective{}, tasks: map[string]map[string]*stewardv1.ObjectiveTaskAdded{}}
}

// fold returns a copy of objective id, folded up to the log's last event
// of it, or nil when it has none.
func (c *objectiveCache) fold(ctx context.Context, id string) (*stewardv1.Objective, error) {
	c.mu.Lock()
	cached := c.heads[id]
	c.mu.Unlock()
	next, after := &stewardv1.Objective{}, uint64(0)
	if cached != nil {
		next, after = proto.CloneOf(cached), cached.LastSequence
	}
	recs, err := c.log.ReadObjectiveAfter(ctx, id, after)
	if err != nil {
		return nil, err
	}
	var added []*stewardv1.ObjectiveTaskAdded
	for _, r := range recs {
		if err := objective.Apply(next, r.Event, r.Sequence); err != nil {
			return nil, errs.Wrap(errs.Corrupt, err, "objective %s", id)
		}
		if a := r.Event.GetObjectiveTaskAdded(); a != nil {
			added = append(added, a)
		}
	}
	if next.ObjectiveId == "" {
		return nil, nil
	}
	c.keep(next, added)
	return proto.CloneOf(next), nil
}

// keep stores o as its objective's head, unless a later one is there, and
// notes the tasks added.
func (c *objectiveCache) keep(o *stewardv1.Objective, added []*stewardv1.ObjectiveTaskAdded) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.heads) >= maxCachedObjectives {
		c.heads, c.tasks = map[string]*stewardv1.Objective{}, map[string]map[string]*stewardv1.ObjectiveTaskAdded{}
	}
	id := o.ObjectiveId
	if cur := c.heads[id]; cur == nil || cur.LastSequence < o.LastSequence {
		c.heads[id] = o
	}
	if c.tasks[id] == nil {
		c.tasks[id] = map[string]*stewardv1.ObjectiveTaskAdded{}
	}
	for _, a := range added {
		c.tasks[id][a.TaskId] = a
	}
}

// added is what objective id reserved for taskID, as far as it was
// folded, or nil: what a retried CreateTask finds.
func (c *objectiveCache) added(id, taskID string) *stewardv1.ObjectiveTaskAdded {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.tasks[id][taskID]
}
