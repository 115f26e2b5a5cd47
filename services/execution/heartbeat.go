package execution

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/steward-run/steward/pkg/event"
	"github.com/steward-run/steward/pkg/eventlog"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/task"
)

// DefaultLease is how long a worker may go silent holding an action before
// another takes it over: long enough for a GC pause or a slow append, short
// enough that a dead worker's call is settled in seconds.
const DefaultLease = 5 * time.Second

// MinLease is the shortest lease: tests use a fraction of a second; a
// deployment should stay well above its clocks' skew (see docs/claims.md).
const MinLease = 30 * time.Millisecond

// heartbeat starts telling, every Lease/3 while a call is in flight, two
// listeners that it is still going: JetStream, so that the event behind
// the call is not redelivered to another worker mid-call, and the task, so
// that no worker takes the call for a dead one's (see hold) and the state
// plane's watchdog does not take it for a stall.
// The returned stop ends it and waits for a beat being written.
func (p *Plane) heartbeat(ctx context.Context, taskID, actionID string, attempt uint32) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	var done sync.WaitGroup
	done.Add(1)
	go func() {
		defer done.Done()
		tick := time.NewTicker(p.cfg.Lease / 3)
		defer tick.Stop()
		beat := uint32(0)
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				beat++
				id := event.ID(actionID, event.TypeActionHeartbeat, fmt.Sprint(attempt), fmt.Sprint(beat))
				// Only for this worker's own call: one taken over since
				// (its lease ran out) gets no beats that would keep
				// another worker's attempt alive.
				held := true
				ours := func(t *stewardv1.Task) bool {
					a := task.FindAction(t, actionID)
					held = a.GetStatus() == stewardv1.ActionStatus_ACTION_STATUS_DISPATCHED && a.GetAttempt() == attempt && a.GetClaimedBy() == p.cfg.Worker
					return held
				}
				err := p.recordIf(ctx, taskID, id, cause{}, &stewardv1.ActionHeartbeat{ActionId: actionID, Attempt: attempt, Beat: beat}, ours)
				switch {
				case err != nil && ctx.Err() == nil:
					// A missed beat is not worth failing the call for.
					p.logger.Warn("heartbeat not recorded", "task", taskID, "action", actionID, "err", err)
				case !held:
					p.logger.Info("call taken over by another worker (this one was silent past its lease); no more heartbeats", "task", taskID, "action", actionID, "attempt", attempt)
					return
				}
			}
		}
	}()
	working := keepWorking(ctx)
	return func() { working(); cancel(); done.Wait() }
}

// keepWorking tells JetStream, until stop, that the reaction running under
// ctx is still working on its event, so that a long call is not taken for a
// reaction cut off by a crash.
func keepWorking(ctx context.Context) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(eventlog.ReactionAckWait / 3)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				eventlog.InProgress(ctx)
			}
		}
	}()
	return func() { cancel(); <-done }
}

// inflight is the set of actions this process is working on, so that a
// timer and a redelivery arriving together do not both go ahead, and a
// redelivery during a long call does not take the call for lost.
type inflight struct {
	mu  sync.Mutex
	ids map[string]bool
}

// take marks id as being worked on; ok is false when it already is.
func (f *inflight) take(id string) (release func(), ok bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.ids[id] {
		return nil, false
	}
	if f.ids == nil {
		f.ids = map[string]bool{}
	}
	f.ids[id] = true
	return func() {
		f.mu.Lock()
		delete(f.ids, id)
		f.mu.Unlock()
	}, true
}
