package task

import (
	"sync"

	"google.golang.org/protobuf/proto"

	"github.com/steward-run/steward/pkg/eventlog"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// cacheSize bounds how many folded tasks one process keeps per log.
const cacheSize = 4096

// folded is a task as folded up to some event, with the ids of the events
// in it. Entries are never changed once stored; a newer fold replaces one.
type folded struct {
	task *stewardv1.Task
	ids  map[string]bool
}

// cache keeps the last fold of recently used tasks, so that Load reads
// only the events appended since, not a task's whole history each time.
// It is safe because the log only ever grows and every event read after
// the cached head is checked by the fold against that head (prev_hash),
// exactly as a full read checks the chain.
type cache struct {
	mu    sync.Mutex
	tasks map[string]*folded
}

var caches sync.Map // *eventlog.Log → *cache

func cacheFor(log *eventlog.Log) *cache {
	c, _ := caches.LoadOrStore(log, &cache{tasks: map[string]*folded{}})
	return c.(*cache)
}

func (c *cache) get(taskID string) *folded {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.tasks[taskID]
}

// put stores f unless a fold at least as recent is there already.
func (c *cache) put(taskID string, f *folded) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if old := c.tasks[taskID]; old != nil && old.task.LastSequence >= f.task.LastSequence {
		return
	}
	if len(c.tasks) >= cacheSize {
		for id := range c.tasks { // drop one at random: cheap, and good enough
			delete(c.tasks, id)
			break
		}
	}
	c.tasks[taskID] = f
}

// extend folds records into a copy of f.
func (f *folded) extend(recs []*stewardv1.EventRecord) (*folded, error) {
	next := &folded{task: &stewardv1.Task{}, ids: make(map[string]bool, len(f.ids)+len(recs))}
	if f.task != nil {
		next.task = proto.CloneOf(f.task)
	}
	for id := range f.ids {
		next.ids[id] = true
	}
	for _, r := range recs {
		if err := Apply(next.task, r.Event, r.Sequence); err != nil {
			return nil, err
		}
		next.ids[r.Event.EventId] = true
	}
	return next, nil
}
