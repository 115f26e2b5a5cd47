package taskstore

import (
	"sync"

	"google.golang.org/protobuf/proto"

	"github.com/steward-run/steward/pkg/eventlog"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/task"
)

// cacheSize bounds how many folded tasks one process keeps per log.
const cacheSize = 4096

// folded is a task as folded up to some event, with the ids of its events.
// The task is never changed once stored; a newer fold replaces it.
type folded struct {
	task *stewardv1.Task
	ids  *idSet
}

// idSet is the ids of a task's events, with the sequence each is stored
// at. Every fold of one task shares it, and ids are only ever added, so a
// set may hold ids newer than a fold that shares it: history reads it as
// of one fold.
type idSet struct {
	mu  sync.RWMutex
	ids map[string]uint64
	// complete is the sequence up to which the set holds every id of the
	// task.
	complete uint64
}

// appended adds the id of an event stored at seq whose predecessor in the
// task is at prev: if the set held every id up to prev, it now does up to
// seq.
func (s *idSet) appended(id string, prev, seq uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ids[id] = seq
	if s.complete >= prev {
		s.complete = max(s.complete, seq)
	}
}

// covers reports whether the set holds every id up to seq.
func (s *idSet) covers(seq uint64) bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.complete >= seq
}

// history is a task's event ids as of one fold: Has finds only the events
// that fold includes, so a caller that finds an id finds its effect in the
// task Load returned with it too.
type history struct {
	set  *idSet
	upTo uint64
}

// Has reports whether an event with id is in the task's history.
func (h history) Has(id string) bool {
	if h.set == nil {
		return false
	}
	h.set.mu.RLock()
	defer h.set.mu.RUnlock()
	seq, ok := h.set.ids[id]
	return ok && seq <= h.upTo
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

// extend folds records into a copy of f's task.
func (f *folded) extend(recs []*stewardv1.EventRecord) (*folded, error) {
	next := &folded{task: &stewardv1.Task{}, ids: f.ids}
	if f.task != nil {
		next.task = proto.CloneOf(f.task)
	}
	if next.ids == nil {
		next.ids = &idSet{ids: map[string]uint64{}}
	}
	for _, r := range recs {
		prev := next.task.GetLastSequence()
		if err := task.Apply(next.task, r.Event, r.Sequence); err != nil {
			return nil, err
		}
		next.ids.appended(r.Event.EventId, prev, r.Sequence)
	}
	return next, nil
}
