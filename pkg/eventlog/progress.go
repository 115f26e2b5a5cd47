package eventlog

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/steward-run/steward/pkg/errs"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// Progress is how far a reader (a projection, an index) has applied the
// log, and lets others wait for it to get somewhere. It is safe for
// concurrent use.
type Progress struct {
	mu      sync.Mutex
	applied uint64
	// wanted is the most any WaitFor has asked for: while it is ahead of
	// applied, someone is waiting on this reader (keepFollowing).
	wanted  uint64
	changed chan struct{}
}

// Advance records that everything up to seq is applied.
func (p *Progress) Advance(seq uint64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if seq <= p.applied {
		return
	}
	p.applied = seq
	if p.changed != nil {
		close(p.changed)
		p.changed = nil
	}
}

// Applied returns the last sequence applied.
func (p *Progress) Applied() uint64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.applied
}

// WaitFor blocks until seq is applied or ctx ends.
func (p *Progress) WaitFor(ctx context.Context, seq uint64) error {
	for {
		p.mu.Lock()
		p.wanted = max(p.wanted, seq)
		applied := p.applied
		if p.changed == nil {
			p.changed = make(chan struct{})
		}
		changed := p.changed
		p.mu.Unlock()
		if applied >= seq {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return errs.Wrap(errs.Unavailable, ctx.Err(), "behind the log (at %d, want %d)", applied, seq)
		}
	}
}

// owed returns how far the reader has got, and how far those waiting on
// it want it to get.
func (p *Progress) owed() (applied, wanted uint64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.applied, p.wanted
}

// Reader applies events in order; Progress says how far it got.
type Reader interface {
	Apply(*stewardv1.EventRecord) error
	Skip(seq uint64, err error)
	Progress() *Progress
}

// KeepReading keeps r applying every task event, from where it got to,
// until ctx ends; if following fails it logs and starts again a second
// later.
func (l *Log) KeepReading(ctx context.Context, r Reader) {
	l.keepFollowing(ctx, r, func(ctx context.Context, after uint64) error { return l.Follow(ctx, "", after, r.Apply, r.Skip) })
}

// KeepReadingTypes is KeepReading over the task events of the given types
// only; CatchUp with LastOfTypes over the same types.
func (l *Log) KeepReadingTypes(ctx context.Context, r Reader, types ...string) {
	l.keepFollowing(ctx, r, func(ctx context.Context, after uint64) error {
		return l.FollowTypes(ctx, types, after, r.Apply, r.Skip)
	})
}

// KeepReadingTools is KeepReading over the tool registrations.
func (l *Log) KeepReadingTools(ctx context.Context, r Reader) {
	l.keepFollowing(ctx, r, func(ctx context.Context, after uint64) error { return l.FollowTools(ctx, after, r.Apply, r.Skip) })
}

// KeepReadingServices is KeepReading over the service events.
func (l *Log) KeepReadingServices(ctx context.Context, r Reader) {
	l.keepFollowing(ctx, r, func(ctx context.Context, after uint64) error {
		return l.FollowServices(ctx, after, r.Apply, r.Skip)
	})
}

// keepFollowing runs follow from where r got to, again whenever it stops:
// a second after it fails, at once when it lost its place (errFollowAgain)
// or stood still for followStall while someone waited for more than r had
// applied (watchStall). A follower whose consumer went with a lost node can sit
// behind without an error or an event, its client reconnected elsewhere:
// only the wait on it shows it, and following anew from where it got to
// cures it.
func (l *Log) keepFollowing(ctx context.Context, r Reader, follow func(ctx context.Context, after uint64) error) {
	for ctx.Err() == nil {
		fctx, cancel := context.WithCancel(ctx)
		stalled := make(chan struct{})
		go watchStall(fctx, r.Progress(), func() { close(stalled); cancel() })
		err := follow(fctx, r.Progress().Applied())
		cancel()
		select {
		case <-stalled:
			applied, wanted := r.Progress().owed()
			l.cfg.Logger.Warn("a reader stood still behind what was asked of it; following the log again", "at", applied, "want", wanted)
			continue
		default:
		}
		if errors.Is(err, errFollowAgain) && ctx.Err() == nil {
			l.cfg.Logger.Warn("a reader lost its place on the log; following it again", "at", r.Progress().Applied(), "err", err)
			continue
		}
		if err != nil && ctx.Err() == nil && !errors.Is(err, context.Canceled) {
			l.cfg.Logger.Error("reader stopped following the log; restarting", "err", err)
			select {
			case <-ctx.Done():
			case <-time.After(time.Second):
			}
		}
	}
}

// followStall is how long a reader may stand still while someone waits
// for more than it has applied before it follows the log anew: well
// inside the 5 s a caller's read waits for it (CatchUp's callers), so
// that a second try of the call finds it caught up.
const followStall = 2 * time.Second

// watchStall calls stalled, once, when p has not moved for followStall
// while a WaitFor wanted more than it had, until ctx ends.
func watchStall(ctx context.Context, p *Progress, stalled func()) {
	tick := time.NewTicker(followStall / 4)
	defer tick.Stop()
	last, since := p.Applied(), time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-tick.C:
			applied, wanted := p.owed()
			if applied >= wanted || applied != last {
				last, since = applied, now
				continue
			}
			if now.Sub(since) >= followStall {
				stalled()
				return
			}
		}
	}
}

// CatchUp waits until r has applied every event on the log now, as last
// (LastTaskSequence or LastToolSequence) reports it.
func CatchUp(ctx context.Context, r Reader, last func(context.Context) (uint64, error)) error {
	seq, err := last(ctx)
	if err != nil {
		return err
	}
	return r.Progress().WaitFor(ctx, seq)
}
