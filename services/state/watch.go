package state

import (
	"context"
	"sync"
	"time"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/rpc"
)

// watchBuffer is how many events a watcher may fall behind the projection
// before it is cut off (and reconnects from its last sequence).
const watchBuffer = 1024

// DefaultMaxActionWait bounds how long GetAction with wait holds a call
// (Config.MaxActionWait): well inside the idle timeouts of the proxies
// and load balancers a call may cross (60 s is common), so that a held
// call is answered rather than cut.
const DefaultMaxActionWait = 30 * time.Second

// waitAction returns once the action stops moving (Projection.moving), ctx
// is about to end (rpc.WaitWithin), Config.MaxActionWait passes or the
// server stops, whichever is first. w is
// the task's notify watcher, registered before the caller's first read.
func (p *Plane) waitAction(ctx context.Context, w *watcher, taskID, actionID string) {
	ctx, cancel := rpc.WaitWithin(ctx, p.cfg.MaxActionWait)
	defer cancel()
	for p.views.moving(taskID, actionID) {
		select {
		case <-w.changed:
		case <-ctx.Done():
			return
		case <-p.streams.Done():
			return
		}
	}
}

// watcher receives one task's events as the projection applies them.
type watcher struct {
	ch      chan *stewardv1.EventRecord // a watch's: the events
	changed chan struct{}               // a wait's: that there are some
	once    sync.Once
}

// watchers fans the projection's events out to open watches, so that a
// watch costs a channel, not a consumer on the server.
type watchers struct {
	mu     sync.Mutex
	byTask map[string]map[*watcher]struct{}
}

// subscribe registers a watcher for taskID that receives the task's
// events. The channel closes when the watcher falls too far behind;
// cancel unregisters it.
func (w *watchers) subscribe(taskID string) (*watcher, func()) {
	return w.add(taskID, &watcher{ch: make(chan *stewardv1.EventRecord, watchBuffer)})
}

// notify registers a watcher for taskID that is told the task changed, and
// not how: what it needs it reads from the view. Its channel holds one
// signal, so it never falls behind.
func (w *watchers) notify(taskID string) (*watcher, func()) {
	return w.add(taskID, &watcher{changed: make(chan struct{}, 1)})
}

func (w *watchers) add(taskID string, x *watcher) (*watcher, func()) {
	w.mu.Lock()
	if w.byTask == nil {
		w.byTask = map[string]map[*watcher]struct{}{}
	}
	if w.byTask[taskID] == nil {
		w.byTask[taskID] = map[*watcher]struct{}{}
	}
	w.byTask[taskID][x] = struct{}{}
	w.mu.Unlock()
	return x, func() {
		w.mu.Lock()
		delete(w.byTask[taskID], x)
		if len(w.byTask[taskID]) == 0 {
			delete(w.byTask, taskID)
		}
		w.mu.Unlock()
		x.close()
	}
}

func (x *watcher) close() {
	if x.ch != nil {
		x.once.Do(func() { close(x.ch) })
	}
}

// publish hands rec to the task's watchers without ever blocking the
// projection: a watcher whose buffer is full is closed instead.
func (w *watchers) publish(rec *stewardv1.EventRecord) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for x := range w.byTask[rec.Event.TaskId] {
		if x.changed != nil {
			select {
			case x.changed <- struct{}{}:
			default: // already told
			}
			continue
		}
		select {
		case x.ch <- rec:
		default:
			delete(w.byTask[rec.Event.TaskId], x)
			x.close()
		}
	}
}
