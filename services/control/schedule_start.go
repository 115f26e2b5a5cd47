package control

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/steward-run/steward/pkg/event"
)

// startTicks ticks every schedule once when the plane starts, as a timer
// would. A firing's timer is set by the tick before it, so a timer lost
// (the timers' stream recreated, a log restored without it) would stop its
// schedule for good; and a plane whose clock is ahead of the NATS
// server's — or injected, in the tests that kill the binary — would wait
// for the server's time to bring a firing its own clock says is due.
// Ticking twice is harmless: a tick records only what is due, under ids
// derived from the firing.
type startTicks struct {
	stop context.CancelFunc
	wg   sync.WaitGroup
}

// startTickTries bounds the rounds of a start's ticks: a schedule whose
// tick fails for now (a read behind a write, a quota's usage not caught
// up, a stream electing its leader) is tried again after startTickWait,
// doubled each round; one that still fails is left to its timer.
const (
	startTickTries = 6
	startTickWait  = time.Second
)

// tickAll ticks every schedule at the plane's time, in the background
// until done or stopped.
func (p *schedules) tickAll(ctx context.Context, st *startTicks) {
	ctx, st.stop = context.WithCancel(ctx)
	st.wg.Go(func() {
		var ids []string
		wait := startTickWait
		for try := range startTickTries {
			if try > 0 && !sleepCtx(ctx, wait) {
				return
			}
			wait *= 2
			if ids == nil {
				live, err := p.liveSchedules(ctx)
				if err != nil {
					p.logger.Warn("schedules not ticked at start: tried again", "err", err)
					continue
				}
				ids = live
			}
			if ids = p.tickEach(ctx, ids); len(ids) == 0 || ctx.Err() != nil {
				return
			}
		}
		if ids == nil {
			p.logger.Warn("schedules not listed at start: left to their timers")
			return
		}
		p.logger.Warn("schedules not ticked at start: left to their timers", "schedules", len(ids))
	})
}

// liveSchedules lists the schedules not deleted, without reading them: a
// deleted schedule's tick does nothing, and years of schedules created
// and deleted would otherwise each be read at every start.
func (p *schedules) liveSchedules(ctx context.Context) ([]string, error) {
	all, err := p.log.ChainIDs(ctx, event.TypeScheduleCreated)
	if err != nil {
		return nil, err
	}
	deleted, err := p.log.ChainIDs(ctx, event.TypeScheduleDeleted)
	if err != nil {
		return nil, err
	}
	live := make([]string, 0, len(all))
	for _, id := range all {
		if _, gone := slices.BinarySearch(deleted, id); !gone {
			live = append(live, id)
		}
	}
	return live, nil
}

// tickEach ticks schedules ids and returns those whose tick failed, with
// one warning a round however many failed (the log unreachable fails all).
func (p *schedules) tickEach(ctx context.Context, ids []string) []string {
	failed := []string{}
	var first error
	for _, id := range ids {
		if ctx.Err() != nil {
			return nil
		}
		if err := p.tickSchedule(ctx, id, time.Time{}, false); err != nil && ctx.Err() == nil {
			first = cmp.Or(first, fmt.Errorf("schedule %s: %w", id, err))
			failed = append(failed, id)
		}
	}
	if first != nil {
		p.logger.Warn("schedules not ticked at start: tried again", "schedules", len(failed), "first", first)
	}
	return failed
}

// sleepCtx waits d, or until ctx is done: false then.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// wait stops the ticks and waits for them to end.
func (st *startTicks) wait() {
	if st.stop != nil {
		st.stop()
	}
	st.wg.Wait()
}
