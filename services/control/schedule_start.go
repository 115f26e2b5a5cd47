package control

import (
	"context"
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

// tickAll ticks every schedule at the plane's time, in the background
// until done or stopped; a schedule it cannot tick is left to its timer.
func (p *schedules) tickAll(ctx context.Context, st *startTicks) {
	ctx, st.stop = context.WithCancel(ctx)
	st.wg.Go(func() {
		ids, err := p.log.ChainIDs(ctx, event.TypeScheduleCreated)
		if err != nil {
			p.logger.Warn("schedules not ticked at start: left to their timers", "err", err)
			return
		}
		for _, id := range ids {
			if err := p.tickSchedule(ctx, id, time.Time{}, false); err != nil && ctx.Err() == nil {
				p.logger.Warn("schedule not ticked at start: left to its timer", "schedule", id, "err", err)
			}
		}
	})
}

// wait stops the ticks and waits for them to end.
func (st *startTicks) wait() {
	if st.stop != nil {
		st.stop()
	}
	st.wg.Wait()
}
