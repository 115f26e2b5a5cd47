package state

import (
	"context"
	"fmt"
	"io"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/steward-run/steward/pkg/errs"
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
	// refused is when the snapshots this plane refused at start were
	// written (unix nanos): one of them still the newest is replaced
	// though it covers no more (SaveSnapshot).
	refused atomic.Int64
}

// build names this binary in the snapshots it writes when Config.Build
// does not.
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
// checks against the log, whose last task event is at last, and returns
// its manifest, nil if it started from none. Nothing about a snapshot is fatal:
// the plane folds from the start instead, and says why.
func (p *Plane) loadSnapshot(ctx context.Context, last uint64) *stewardv1.ViewsSnapshotManifest {
	if p.cfg.Views == nil {
		return nil
	}
	start := time.Now()
	m, err := p.cfg.Views.Newest(ctx)
	if err != nil {
		p.logger.Warn("snapshots could not be read; folding the log from the start", "err", err)
		return nil
	}
	for tries := 0; m != nil && tries < 2; tries++ {
		h, entries, err := p.readSnapshot(ctx, m)
		read := time.Since(start)
		var gone []string
		if err == nil {
			gone, err = p.checkHeads(ctx, last, h, entries)
		}
		if err == nil {
			checked := time.Since(start)
			p.views.load(h, entries)
			p.views.drop(gone, nil)
			if m.StubChunks > 0 {
				p.views.expectStubs() // Start loads them once it serves
			}
			p.snap.loadNanos.Store(int64(time.Since(start)))
			p.snap.noteStored(m)
			p.logger.Info("views loaded from a snapshot", "covered", m.CoveredSequence, "tasks", len(entries), "bytes", m.Size,
				"stub_bytes", m.StubSize, "read", read.Round(time.Millisecond), "checked", checked.Round(time.Millisecond),
				"took", time.Since(start).Round(time.Millisecond))
			return m
		}
		p.logger.Warn("snapshot refused", "covered", m.CoveredSequence, "err", err)
		if tries == 0 {
			p.snap.refused.Store(m.WrittenAt.AsTime().UnixNano())
		}
		if m.Previous == 0 || m.Previous == m.CoveredSequence {
			break
		}
		if m, err = p.cfg.Views.Manifest(ctx, m.Previous); err != nil {
			p.logger.Warn("the snapshot before could not be read", "err", err)
			break
		}
	}
	if m != nil {
		p.logger.Warn("no snapshot could be used; folding the log from the start")
	}
	return nil
}

func (p *Plane) readSnapshot(ctx context.Context, m *stewardv1.ViewsSnapshotManifest) (*stewardv1.ViewsSnapshotHeader, []*stewardv1.TaskViewSnapshot, error) {
	h, entries, err := ReadSnapshot(p.cfg.Views.Open(ctx, m))
	switch {
	case err != nil:
	case h.CoveredSequence != m.CoveredSequence:
		err = fmt.Errorf("named for %d, it covers %d", m.CoveredSequence, h.CoveredSequence)
	case h.Build != p.cfg.Build:
		// Another build may fold the same events into other views (a new
		// field, a changed rule) without anyone bumping ViewsFormat: its
		// snapshot is not this build's fold. The first start of a new
		// build folds the log from the start, once.
		err = fmt.Errorf("written by build %q, this is %q", h.Build, p.cfg.Build)
	}
	return h, entries, err
}

// checkHeads checks what a snapshot claims against the log: the log
// (whose last task event is at last) reaches the sequence it covers, and
// the chain heads it claims (a bounded sample, headsChecked) are on the
// log with the same hash. It returns the sampled tasks whose chain is
// gone from the log and archived (archivedAway): purged since the
// snapshot, they are to leave the views, not to refuse it.
func (p *Plane) checkHeads(ctx context.Context, last uint64, h *stewardv1.ViewsSnapshotHeader, entries []*stewardv1.TaskViewSnapshot) ([]string, error) {
	if last < h.CoveredSequence && !p.purgedSince(ctx, h.CoveredSequence) {
		return nil, fmt.Errorf("it covers the log up to %d, the log ends at %d", h.CoveredSequence, last)
	}
	return p.checkSample(ctx, entries)
}

// checkSample checks a sample of the entries' chain heads against the
// log (checkHeads), and returns the sampled tasks archived away since.
func (p *Plane) checkSample(ctx context.Context, entries []*stewardv1.TaskViewSnapshot) ([]string, error) {
	var g errgroup.Group
	g.SetLimit(headReads)
	var mu sync.Mutex
	var gone []string
	for _, e := range sampleHeads(entries, headsChecked) {
		g.Go(func() error {
			err := p.checkHead(ctx, e)
			if errs.Is(err, errs.NotFound) && p.archivedAway(ctx, e.TaskId) {
				mu.Lock()
				defer mu.Unlock()
				gone = append(gone, e.TaskId)
				return nil
			}
			return err
		})
	}
	return gone, g.Wait()
}

// purgedSince reports whether the log, whose last task event is short of
// covered, did reach it and lost its newest task events to the archiver
// since: with an archive only (no other way takes events away); the
// sampled heads then tell whether what is gone was archived.
func (p *Plane) purgedSince(ctx context.Context, covered uint64) bool {
	if p.cfg.Archive == nil {
		return false
	}
	reached, err := p.log.Reached(ctx)
	return err == nil && reached >= covered
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

// SaveSnapshot writes a snapshot of the task views unless the newest
// stored covers as much (another replica's, or this one's with nothing
// applied since) and is not old enough to refresh, and returns the
// sequence the newest covers. The fold goes on while it writes
// (WriteSnapshot), and a write holds one chunk in memory.
func (p *Plane) SaveSnapshot(ctx context.Context) (uint64, error) {
	if p.cfg.Views == nil {
		return 0, nil
	}
	start := time.Now()
	h := p.views.SnapshotHeader(p.cfg.Build, p.cfg.Now())
	newest, err := p.cfg.Views.Newest(ctx)
	if err != nil {
		return 0, err
	}
	if n := newest.GetCoveredSequence(); n > h.CoveredSequence || n == h.CoveredSequence && !p.stale(newest) && !p.refusedIt(newest) {
		p.snap.noteStored(newest)
		return n, nil
	}
	m, err := p.cfg.Views.Put(ctx, h.CoveredSequence, h.WrittenAt.AsTime(), func(hot, stubs io.Writer) error {
		return p.views.WriteSnapshot(hot, stubs, h)
	})
	if err != nil {
		return 0, fmt.Errorf("write the snapshot covering %d: %w", h.CoveredSequence, err)
	}
	p.snap.size.Store(m.Size + m.StubSize)
	p.snap.writeNanos.Store(int64(time.Since(start)))
	p.snap.noteStored(m)
	p.logger.Info("views snapshot written", "covered", h.CoveredSequence, "bytes", m.Size, "stub_bytes", m.StubSize, "took", time.Since(start).Round(time.Millisecond))
	return h.CoveredSequence, nil
}

// stale reports whether m is old enough that its keys should be written
// again before the bucket's age limit takes them (ViewsTTL).
func (p *Plane) stale(m *stewardv1.ViewsSnapshotManifest) bool {
	return p.cfg.Now().Sub(m.WrittenAt.AsTime()) >= ViewsTTL/4
}

// refusedIt reports whether m is the newest snapshot this plane refused
// at start: left the newest, every start would refuse it again.
func (p *Plane) refusedIt(m *stewardv1.ViewsSnapshotManifest) bool {
	at := p.snap.refused.Load()
	return at != 0 && m.WrittenAt.AsTime().UnixNano() == at
}

// noteStored records m as the newest snapshot the plane knows of.
func (s *snapshotStats) noteStored(m *stewardv1.ViewsSnapshotManifest) {
	s.writtenAt.Store(m.WrittenAt.AsTime().UnixNano())
	s.covered.Store(m.CoveredSequence)
}

// snapshotDue reports whether the views have moved on by SnapshotEvery
// events since the last snapshot, or by any for SnapshotInterval, or the
// last is old enough to refresh.
func (p *Plane) snapshotDue() bool {
	applied, covered := p.views.progress.Applied(), p.snap.covered.Load()
	age := p.cfg.Now().Sub(time.Unix(0, p.snap.writtenAt.Load()))
	if applied <= covered {
		return applied > 0 && age >= ViewsTTL/4
	}
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
