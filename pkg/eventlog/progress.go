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
	l.keepFollowing(ctx, r, func(after uint64) error { return l.Follow(ctx, "", after, r.Apply, r.Skip) })
}

// KeepReadingTypes is KeepReading over the task events of the given types
// only; CatchUp with LastOfTypes over the same types.
func (l *Log) KeepReadingTypes(ctx context.Context, r Reader, types ...string) {
	l.keepFollowing(ctx, r, func(after uint64) error { return l.FollowTypes(ctx, types, after, r.Apply, r.Skip) })
}

// KeepReadingTools is KeepReading over the tool registrations.
func (l *Log) KeepReadingTools(ctx context.Context, r Reader) {
	l.keepFollowing(ctx, r, func(after uint64) error { return l.FollowTools(ctx, after, r.Apply, r.Skip) })
}

// KeepReadingServices is KeepReading over the service events.
func (l *Log) KeepReadingServices(ctx context.Context, r Reader) {
	l.keepFollowing(ctx, r, func(after uint64) error { return l.FollowServices(ctx, after, r.Apply, r.Skip) })
}

func (l *Log) keepFollowing(ctx context.Context, r Reader, follow func(after uint64) error) {
	for ctx.Err() == nil {
		err := follow(r.Progress().Applied())
		if err != nil && !errors.Is(err, context.Canceled) {
			l.cfg.Logger.Error("reader stopped following the log; restarting", "err", err)
			select {
			case <-ctx.Done():
			case <-time.After(time.Second):
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
