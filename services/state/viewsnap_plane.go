package state

import (
	"context"
	"fmt"
	"io"
	"runtime/debug"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// Defaults of the snapshot schedule (Config.SnapshotEvery and
// SnapshotInterval): a snapshot per 100,000 events keeps the fold at
// start under a second's work here (docs/performance.md); one an hour
// keeps it fresh when the log is quiet.
const (
	DefaultSnapshotEvery    = 100_000
	DefaultSnapshotInterval = time.Hour
)

// snapshotLook is how often the plane asks whether a snapshot is due.
const snapshotLook = 10 * time.Second

// headsChecked bounds how many of a snapshot's chain heads are checked
// against the log at start, half the most recent, half spread over the
// rest, headReads at a time: a check of all would cost a read per task,
// which is what the snapshot saves.
const (
	headsChecked = 64
	headReads    = 8
)

// snapshotStats are the snapshot metrics (docs/metrics.md).
type snapshotStats struct {
	writtenAt  atomic.Int64 // unix nanos of the newest written or loaded
	size       atomic.Uint64
	writeNanos atomic.Int64
	loadNanos  atomic.Int64
	covered    atomic.Uint64
}

// build names this binary in the snapshots it writes.
func build() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	for _, s := range info.Settings {
		if s.Key == "vcs.revision" {
			return info.Main.Version + " " + s.Value
		}
	}
	return info.Main.Version
}

// loadSnapshot starts the views from the newest snapshot that reads and
// checks, and reports whether it did. Nothing about a snapshot is fatal:
// the plane folds from the start instead, and says why.
func (p *Plane) loadSnapshot(ctx context.Context) bool {
	if p.cfg.Views == nil {
		return false
	}
	start := time.Now()
	covered, err := p.cfg.Views.Covered(ctx)
	if err != nil {
		p.logger.Warn("snapshots could not be listed; folding the log from the start", "err", err)
		return false
	}
	for _, seq := range covered[:min(len(covered), 2)] {
		h, entries, err := p.readSnapshot(ctx, seq)
		if err == nil {
			err = p.checkHeads(ctx, h, entries)
		}
		if err != nil {
			p.logger.Warn("snapshot refused", "covered", seq, "err", err)
			continue
		}
		p.views.load(h, entries)
		p.snap.loadNanos.Store(int64(time.Since(start)))
		p.snap.writtenAt.Store(h.WrittenAt.AsTime().UnixNano())
		p.snap.covered.Store(seq)
		p.logger.Info("views loaded from a snapshot", "covered", seq, "tasks", len(entries), "took", time.Since(start).Round(time.Millisecond))
		return true
	}
	if len(covered) > 0 {
		p.logger.Warn("no snapshot could be used; folding the log from the start")
	}
	return false
}

func (p *Plane) readSnapshot(ctx context.Context, seq uint64) (*stewardv1.ViewsSnapshotHeader, []*stewardv1.TaskViewSnapshot, error) {
	r, err := p.cfg.Views.Get(ctx, seq)
	if err != nil {
		return nil, nil, err
	}
	defer r.Close()
	h, entries, err := ReadSnapshot(r)
	if err == nil && h.CoveredSequence != seq {
		err = fmt.Errorf("named for %d, it covers %d", seq, h.CoveredSequence)
	}
	return h, entries, err
}

// checkHeads checks what a snapshot claims against the log: the log
// reaches the sequence it covers, and the chain heads it claims (a bounded
// sample, headsChecked) are on the log with the same hash.
func (p *Plane) checkHeads(ctx context.Context, h *stewardv1.ViewsSnapshotHeader, entries []*stewardv1.TaskViewSnapshot) error {
	last, err := p.log.LastTaskSequence(ctx)
	if err != nil {
		return err
	}
	if last < h.CoveredSequence {
		return fmt.Errorf("it covers the log up to %d, the log ends at %d", h.CoveredSequence, last)
	}
	var g errgroup.Group
	g.SetLimit(headReads)
	for _, e := range sampleHeads(entries, headsChecked) {
		g.Go(func() error { return p.checkHead(ctx, e) })
	}
	return g.Wait()
}

// checkHead checks one entry's chain head against the log.
func (p *Plane) checkHead(ctx context.Context, e *stewardv1.TaskViewSnapshot) error {
	t := e.Task
	rec, err := p.log.EventAt(ctx, e.TaskId, t.LastSequence)
	if err != nil {
		return fmt.Errorf("task %s's head %d: %w", e.TaskId, t.LastSequence, err)
	}
	if string(rec.Event.Hash) != string(t.LastHash) {
		return fmt.Errorf("task %s's head %d has hash %x on the log, %x in the snapshot", e.TaskId, t.LastSequence, rec.Event.Hash, t.LastHash)
	}
	return nil
}

// sampleHeads returns up to n entries with a view: the n/2 with the latest
// heads, and the rest spread evenly over the others.
func sampleHeads(entries []*stewardv1.TaskViewSnapshot, n int) []*stewardv1.TaskViewSnapshot {
	var with []*stewardv1.TaskViewSnapshot
	for _, e := range entries {
		if e.Task != nil && e.Task.LastSequence > 0 {
			with = append(with, e)
		}
	}
	if len(with) <= n {
		return with
	}
	latest := make([]*stewardv1.TaskViewSnapshot, len(with))
	copy(latest, with)
	sortByHead(latest)
	out := latest[:n/2]
	rest := latest[n/2:]
	step := len(rest) / (n - n/2)
	for i := 0; i < len(rest) && len(out) < n; i += step {
		out = append(out, rest[i])
	}
	return out
}

// SaveSnapshot writes a snapshot of the task views unless a snapshot
// covering as much is stored already (another replica's, or this one's
// with nothing applied since), and returns the sequence it covers. The
// fold goes on while it writes (WriteSnapshot).
func (p *Plane) SaveSnapshot(ctx context.Context) (uint64, error) {
	if p.cfg.Views == nil {
		return 0, nil
	}
	start := time.Now()
	h := p.views.SnapshotHeader(build(), p.cfg.Now())
	stored, err := p.cfg.Views.Covered(ctx)
	if err != nil {
		return 0, err
	}
	if len(stored) > 0 && stored[0] >= h.CoveredSequence {
		return stored[0], nil
	}
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(p.views.WriteSnapshot(pw, h)) }()
	size, err := p.cfg.Views.Put(ctx, h.CoveredSequence, pr)
	pr.CloseWithError(err) // ends the writer if the put gave up
	if err != nil {
		return 0, fmt.Errorf("write the snapshot covering %d: %w", h.CoveredSequence, err)
	}
	p.snap.size.Store(size)
	p.snap.writeNanos.Store(int64(time.Since(start)))
	p.snap.writtenAt.Store(h.WrittenAt.AsTime().UnixNano())
	p.snap.covered.Store(h.CoveredSequence)
	p.logger.Info("views snapshot written", "covered", h.CoveredSequence, "bytes", size, "took", time.Since(start).Round(time.Millisecond))
	return h.CoveredSequence, nil
}

// snapshotDue reports whether the views have moved on by SnapshotEvery
// events since the last snapshot, or by any for SnapshotInterval.
func (p *Plane) snapshotDue() bool {
	applied, covered := p.views.progress.Applied(), p.snap.covered.Load()
	if applied <= covered {
		return false
	}
	age := p.cfg.Now().Sub(time.Unix(0, p.snap.writtenAt.Load()))
	return applied-covered >= p.cfg.SnapshotEvery || age >= p.cfg.SnapshotInterval
}

// keepSnapshotting writes a snapshot whenever one is due, until ctx ends.
func (p *Plane) keepSnapshotting(ctx context.Context) {
	tick := time.NewTicker(snapshotLook)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if !p.snapshotDue() {
			continue
		}
		if _, err := p.SaveSnapshot(ctx); err != nil && ctx.Err() == nil {
			p.logger.Warn("views snapshot not written; the next look tries again", "err", err)
		}
	}
}
