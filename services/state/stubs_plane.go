package state

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/steward-run/steward/pkg/eventlog"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// loadStubs reads m's stubs part while the plane serves, checks a sample
// of their chain heads against the log as the first part's were, and
// puts them in the views. A part that cannot be read or does not check
// is not trusted: the tasks it would have held are folded from the log
// instead, up to the sequence the snapshot covers, the one way a start
// from no snapshot would have them.
func (p *Plane) loadStubs(ctx context.Context, m *stewardv1.ViewsSnapshotManifest) {
	if p.holdStubs != nil {
		<-p.holdStubs
	}
	start := time.Now()
	entries, err := ReadStubs(p.cfg.Views.OpenStubs(ctx, m))
	var gone []string
	if err == nil {
		gone, err = p.checkSample(ctx, entries)
	}
	if err == nil {
		p.views.installStubs(entries, m.CoveredSequence, gone)
		p.logger.Info("evicted tasks loaded from the snapshot", "tasks", len(entries), "bytes", m.StubSize,
			"took", time.Since(start).Round(time.Millisecond))
		return
	}
	if ctx.Err() == nil {
		p.logger.Warn("the snapshot's stubs were refused; folding the tasks they hold from the log", "covered", m.CoveredSequence, "err", err)
	}
	// Until it folds or the plane stops: giving up would serve the views
	// without the ended tasks, and refuse the events kept for them.
	for ctx.Err() == nil {
		var back *Projection
		if back, err = p.foldThrough(ctx, m.CoveredSequence); err == nil {
			p.views.installFolded(back)
			if p.cfg.EvictAfter > 0 { // they came whole: stubs again before a snapshot holds them whole
				p.views.Evict(p.cfg.Now().Add(-p.cfg.EvictAfter))
			}
			p.logger.Info("evicted tasks folded from the log", "took", time.Since(start).Round(time.Millisecond))
			return
		}
		p.logger.Warn("the evicted tasks could not be folded from the log; trying again", "err", err)
		select {
		case <-ctx.Done():
		case <-time.After(foldRetry):
		}
	}
	// The plane stops: the reads waiting for the stubs go on, to end.
	p.logger.Warn("the snapshot's stubs were not loaded", "err", err)
	p.views.installStubs(nil, m.CoveredSequence, nil)
}

// foldThrough folds the log from its start into a projection of its own,
// up to sequence covered.
func (p *Plane) foldThrough(ctx context.Context, covered uint64) (*Projection, error) {
	if p.foldsToFail.Add(-1) >= 0 {
		return nil, errors.New("the log could not be read (a test's)")
	}
	last, err := p.log.LastTaskSequence(ctx)
	if err != nil {
		return nil, err
	}
	back := bounded{NewProjection(p.logger), covered}
	fctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { p.log.KeepReading(fctx, back) })
	err = back.WaitFor(ctx, min(covered, last)) // the log may have lost its last to the archiver
	cancel()
	wg.Wait()
	return back.Projection, err
}

// foldRetry is how long a plane waits to fold the log again after a
// fold of the evicted tasks failed.
const foldRetry = time.Second

// bounded is a projection that folds no event past sequence through, and
// counts them as applied.
type bounded struct {
	*Projection
	through uint64
}

func (b bounded) Apply(rec *stewardv1.EventRecord) error {
	if rec.Sequence > b.through {
		b.progress.Advance(rec.Sequence)
		return nil
	}
	return b.Projection.Apply(rec)
}

func (b bounded) Skip(seq uint64, err error) {
	if seq > b.through {
		b.progress.Advance(seq)
		return
	}
	b.Projection.Skip(seq, err)
}

var _ eventlog.Reader = bounded{}
