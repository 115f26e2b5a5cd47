package taskstore

import (
	"context"
	"sync"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/steward-run/steward/pkg/errs"
	"github.com/steward-run/steward/pkg/eventlog"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/task"
)

// cacheSize bounds how many folded tasks one Store keeps.
const cacheSize = 4096

// entry is one task as this process last folded it. Its fold is changed
// in place, only while the entry is held, and never leaves the entry:
// Load hands out copies (sharing the task's parts, which the fold
// replaces rather than changes: see copyOut), and a build sees it only
// while the entry is held (Write). So a write costs nothing in the size of
// the task, and a read one copy of the task's top level and lists.
type entry struct {
	// held is the entry's lock: a slot, so that whoever waits for it can
	// give up with their context, since it is held across reads and
	// appends on the network.
	held chan struct{}
	task *stewardv1.Task // nil until a first event is folded
	ids  *idSet
	// readFirst: the last read before a write found events another
	// process wrote (replicas of a plane taking turns on a task), so the
	// next write reads first too rather than try the fold as it is.
	readFirst bool
	// lent holds, in race-detector builds only, a copy of each part
	// shared with a caller, handed out with a task or written in an
	// event, and still the fold's (see copyOut, take).
	lent map[proto.Message]proto.Message
}

func newEntry() *entry { return &entry{held: make(chan struct{}, 1), ids: newIDSet()} }

// hold takes the entry, or gives up when ctx ends.
func (e *entry) hold(ctx context.Context) error {
	select {
	case e.held <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (e *entry) release() { <-e.held }

// apply folds recs into the entry's task. A record the fold refuses
// empties the entry, to be read afresh, and is returned.
func (e *entry) apply(recs ...*stewardv1.EventRecord) error {
	e.checkLent()
	for _, r := range recs {
		if e.task == nil {
			e.task = &stewardv1.Task{}
		}
		prev := e.task.LastSequence
		if err := task.Apply(e.task, r.Event, r.Sequence); err != nil {
			e.task, e.ids, e.lent = nil, newIDSet(), nil
			return err
		}
		e.ids.appended(r.Event.EventId, prev, r.Sequence)
	}
	return nil
}

// catchUp reads and folds what was appended since the entry's fold; a
// task with no events is NotFound. Under a reaction to one of the task's
// events, a read that has not reached that event is "not yet"
// (eventlog.ReadFloor): the task is there, the read is behind.
func (e *entry) catchUp(ctx context.Context, s *Store, taskID string) error {
	recs, err := s.log.ReadAfter(ctx, taskID, e.task.GetLastSequence())
	if err != nil {
		return err
	}
	if err := e.apply(recs...); err != nil {
		return errs.Wrap(errs.Corrupt, err, "task %s", taskID)
	}
	floor := eventlog.ReadFloor(ctx, taskID)
	if e.task == nil {
		s.cache.forget(taskID, e)
		if floor > 0 {
			return errs.Later(behindRetry, "task %s read from behind its event at seq %d: it has no events yet", taskID, floor)
		}
		return errs.New(errs.NotFound, "task %s not found", taskID)
	}
	if e.task.LastSequence < floor {
		return errs.Later(behindRetry, "task %s read up to seq %d, behind its event at seq %d", taskID, e.task.LastSequence, floor)
	}
	return nil
}

// reach brings the entry's fold up to seq at least. Under a reaction to
// the task's event at seq (eventlog.Handled), it reads only the events
// between the fold and that one, none when the event stands on the fold's
// head, and folds the event it was handed: reading it again would be a
// round trip to the server for each plane that keeps a fold of its own
// (services mode). Else, and when the fold refuses what it got, catchUp.
func (e *entry) reach(ctx context.Context, s *Store, taskID string, seq uint64) error {
	if rec := eventlog.Handled(ctx, taskID, seq); rec != nil && e.task != nil {
		// Not a copy: the fold keeps parts of its events and changes none,
		// and the event is shared read-only with its other readers
		// (eventlog.Handler).
		recs, err := s.log.ReadUpTo(ctx, taskID, eventlog.HeadOf(e.task), rec)
		if err != nil {
			return err
		}
		if e.apply(recs...) == nil {
			return nil
		}
		// Refused, and the entry emptied: read afresh.
	}
	return e.catchUp(ctx, s, taskID)
}

// behindRetry is how soon a reaction whose read was behind its event comes
// again: a replica catches up in milliseconds, a new stream leader within
// its election.
const behindRetry = 100 * time.Millisecond

// history is the entry's ids as of its fold now.
func (e *entry) history() history { return history{set: e.ids, upTo: e.task.GetLastSequence()} }

// idSet is the ids of a task's events, with the sequence each is stored
// at. Ids are only ever added, so a set may hold ids newer than a fold
// handed out earlier: history reads it as of one fold.
type idSet struct {
	mu  sync.RWMutex
	ids map[string]uint64
	// complete is the sequence up to which the set holds every id of the
	// task.
	complete uint64
}

func newIDSet() *idSet { return &idSet{ids: map[string]uint64{}} }

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

// cache keeps the fold of recently used tasks, so that a read or a write
// reads only the events appended since, not a task's whole history each
// time. It is safe because the log only ever grows and every event read
// after the cached head is checked by the fold against that head
// (prev_hash), exactly as a full read checks the chain.
type cache struct {
	mu    sync.Mutex
	tasks map[string]*entry
}

func newCache() *cache { return &cache{tasks: map[string]*entry{}} }

// entry returns taskID's entry, made empty if the cache has none. An
// entry dropped to make room stays valid for whoever holds it.
func (c *cache) entry(taskID string) *entry {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e := c.tasks[taskID]; e != nil {
		return e
	}
	if len(c.tasks) >= cacheSize {
		for id := range c.tasks { // drop one at random: cheap, and good enough
			delete(c.tasks, id)
			break
		}
	}
	e := newEntry()
	c.tasks[taskID] = e
	return e
}

// forget drops taskID's entry e if the cache still keeps it: a task
// that is not on the log takes no room from those that are. Whoever holds
// e may go on using it.
func (c *cache) forget(taskID string, e *entry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.tasks[taskID] == e {
		delete(c.tasks, taskID)
	}
}

// take folds ev, which a write of this process appended at seq, into the
// entry's task without a copy: the fold keeps the event's messages (an
// action's request, a snapshot, a permit, …), which the writer handed over
// with it and no longer changes (Build). Sharing them is safe on the
// fold's side too, which replaces a part rather than change it. In
// race-detector builds the parts are lent as Load's are (copyOut), so a
// writer that does change its event after is caught the next time the
// task is read or written.
func (e *entry) take(ev *stewardv1.Event, seq uint64) error {
	if err := e.apply(&stewardv1.EventRecord{Sequence: seq, Event: ev}); err != nil {
		return err
	}
	e.lend()
	return nil
}
