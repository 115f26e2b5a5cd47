package state

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"runtime"
	"slices"
	"time"

	"golang.org/x/sync/errgroup"
	"google.golang.org/protobuf/encoding/protodelim"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// ViewsFormat is the format of the snapshots this build writes. Format 3
// keeps the evicted tasks' stubs in a part of their own, which a plane
// loads while it serves (stubs.go); format 2 has them among the other
// entries (TaskViewSnapshot.evicted), format 1 has none. It reads all
// three (a build that reads fewer refuses a newer one and folds the log).
const ViewsFormat = 3

// snapshotBatch is how many tasks a snapshot copies under one hold of the
// read lock: the fold waits for one batch at most, not for the snapshot.
const snapshotBatch = 512

// SnapshotHeader begins a snapshot of the task views: the sequence they
// cover, as of now, once a snapshot's stubs still loading are in. WriteSnapshot writes the rest.
func (p *Projection) SnapshotHeader(build string, now time.Time) *stewardv1.ViewsSnapshotHeader {
	p.awaitStubs()
	p.mu.RLock()
	defer p.mu.RUnlock()
	skipped := p.rejected
	for _, n := range p.refused {
		skipped -= n
	}
	return &stewardv1.ViewsSnapshotHeader{FormatVersion: ViewsFormat, Build: build, CoveredSequence: p.progress.Applied(),
		WrittenAt: timestamppb.New(now), Skipped: uint64(skipped)}
}

// WriteSnapshot writes h and the task views to hot, and the evicted
// tasks' stubs to stubs (docs/snapshots.md). It copies them in batches,
// letting the fold go on between them, so the views are not all of h's
// sequence: each task's entry says how far it was folded
// (folded_through), and a load skips the events it already holds. Safe
// to call while Apply runs; it waits for a snapshot's stubs still loading.
func (p *Projection) WriteSnapshot(hot, stubs io.Writer, h *stewardv1.ViewsSnapshotHeader) error {
	hw, sw := bufio.NewWriterSize(hot, 1<<16), bufio.NewWriterSize(stubs, 1<<16)
	if _, err := protodelim.MarshalTo(hw, h); err != nil {
		return err
	}
	for next := 0; ; {
		batch, done := p.copyBatch(next)
		next += snapshotBatch
		for _, e := range batch {
			w := hw
			if e.Evicted {
				w = sw
			}
			if _, err := protodelim.MarshalTo(w, e); err != nil {
				return err
			}
		}
		if done {
			break
		}
	}
	if err := hw.Flush(); err != nil {
		return err
	}
	return sw.Flush()
}

// copyBatch copies the entries of the tasks at positions from on, at
// most snapshotBatch of them, and the broken tasks that have no view once
// the last batch is reached; done says it was the last.
func (p *Projection) copyBatch(from int) (out []*stewardv1.TaskViewSnapshot, done bool) {
	p.awaitStubs()
	p.mu.RLock()
	defer p.mu.RUnlock()
	applied := p.progress.Applied()
	end := min(from+snapshotBatch, len(p.order))
	for i, id := range p.order[from:end] {
		if id == "" {
			continue // a task that left the views (drop)
		}
		e := p.entry(id, p.tasks[id], applied)
		e.Position = uint64(from + i)
		out = append(out, e)
	}
	if end < len(p.order) {
		return out, false
	}
	for id := range p.broken {
		if _, ok := p.tasks[id]; !ok {
			e := p.entry(id, nil, applied)
			e.Position = uint64(len(p.order))
			out = append(out, e)
		}
	}
	return out, true
}

// entry is one task's snapshot entry; the caller holds p.mu.
func (p *Projection) entry(id string, v *view, applied uint64) *stewardv1.TaskViewSnapshot {
	e := &stewardv1.TaskViewSnapshot{TaskId: id, FoldedThrough: applied, Broken: p.broken[id], Refused: uint64(p.refused[id])}
	if v == nil {
		return e
	}
	e.Task = proto.CloneOf(v.task)
	e.Evicted = v.cold
	if len(v.pending) > 0 {
		// Its events since are not in the stub: a start folds them again.
		e.FoldedThrough = v.task.LastSequence
	}
	e.Answered = v.answered
	e.SpentTokens, e.SpentCostMicros = v.spent.tokens, v.spent.cost
	r := &v.recoveries
	e.UnknownRecoveries = durations(r.took[fromUnknownOutcome])
	e.StallRecoveries = durations(r.took[fromStall])
	if len(r.unknownSince) > 0 {
		e.UnknownSince = make(map[string]*timestamppb.Timestamp, len(r.unknownSince))
		for a, at := range r.unknownSince {
			e.UnknownSince[a] = timestamppb.New(at)
		}
	}
	if !r.stalledAt.IsZero() {
		e.StalledAt = timestamppb.New(r.stalledAt)
	}
	return e
}

func durations(ds []time.Duration) []*durationpb.Duration {
	out := make([]*durationpb.Duration, len(ds))
	for i, d := range ds {
		out[i] = durationpb.New(d)
	}
	return out
}

// ReadSnapshot reads a snapshot written by WriteSnapshot: its header and
// first part. It checks the format but not the log (checkHeads does); the
// projection is not touched.
func ReadSnapshot(r io.Reader) (*stewardv1.ViewsSnapshotHeader, []*stewardv1.TaskViewSnapshot, error) {
	br := bufio.NewReaderSize(r, 1<<16)
	h := &stewardv1.ViewsSnapshotHeader{}
	if err := protodelim.UnmarshalFrom(br, h); err != nil {
		return nil, nil, fmt.Errorf("read the header: %w", err)
	}
	if h.FormatVersion < 1 || h.FormatVersion > ViewsFormat {
		return nil, nil, fmt.Errorf("format %d, this build reads 1 to %d", h.FormatVersion, ViewsFormat)
	}
	entries, err := readEntries(br)
	return h, entries, err
}

// ReadStubs reads a snapshot's stubs part (format 3).
func ReadStubs(r io.Reader) ([]*stewardv1.TaskViewSnapshot, error) {
	return readEntries(bufio.NewReaderSize(r, 1<<16))
}

// readEntries reads what is left of r as entries, decoded on every core:
// decoding is most of a load.
func readEntries(br *bufio.Reader) ([]*stewardv1.TaskViewSnapshot, error) {
	raw, err := readFramed(br)
	if err != nil {
		return nil, err
	}
	entries := make([]*stewardv1.TaskViewSnapshot, len(raw))
	var g errgroup.Group
	workers := runtime.GOMAXPROCS(0)
	for w := range workers {
		g.Go(func() error {
			for i := w; i < len(raw); i += workers {
				entries[i] = &stewardv1.TaskViewSnapshot{}
				if err := proto.Unmarshal(raw[i], entries[i]); err != nil {
					return fmt.Errorf("read task %d: %w", i+1, err)
				}
			}
			return nil
		})
	}
	return entries, g.Wait()
}

// readFramed splits what is left of r into its length-delimited frames.
func readFramed(r *bufio.Reader) ([][]byte, error) {
	var out [][]byte
	for {
		n, err := binary.ReadUvarint(r)
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil || n > maxEntryBytes {
			return nil, fmt.Errorf("read task %d: length %d: %v", len(out)+1, n, err)
		}
		b, err := readEntry(r, n)
		if err != nil {
			return nil, fmt.Errorf("read task %d: %w", len(out)+1, err)
		}
		out = append(out, b)
	}
}

// readEntry reads an entry of n bytes. A large one is grown as its bytes
// come, not allocated from its length: the length is not checked (the
// manifest's hash is, at the end), and may be damaged.
func readEntry(r io.Reader, n uint64) ([]byte, error) {
	if n <= entryStart {
		b := make([]byte, n)
		_, err := io.ReadFull(r, b)
		return b, err
	}
	var b bytes.Buffer
	_, err := io.CopyN(&b, r, int64(n))
	return b.Bytes(), err
}

// maxEntryBytes bounds one task's entry: a task's view is bounded by the
// log's events, but a length read from damaged bytes is not.
const maxEntryBytes = 256 << 20

// entryStart is what a task's entry is given before its bytes come.
const entryStart = 1 << 20

// load sets an empty projection to the snapshot's views, as if it had
// folded the log up to h.CoveredSequence; Apply then skips each task's
// events up to its folded_through. A format 3 snapshot's stubs come
// after (installStubs).
func (p *Projection) load(h *stewardv1.ViewsSnapshotHeader, entries []*stewardv1.TaskViewSnapshot) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.rejected = int(h.Skipped)
	p.foldedThrough = make(map[string]uint64, len(entries))
	for _, e := range entries {
		p.foldedThrough[e.TaskId] = e.FoldedThrough
		p.skipUntil = max(p.skipUntil, e.FoldedThrough)
		if v := p.place(e, h.CoveredSequence); v != nil {
			p.order = append(p.order, e.TaskId)
			if h.FormatVersion >= 3 { // only format 3 has places, and stubs to place among them
				p.places = append(p.places, e.Position)
			}
			p.byTenant[v.task.Tenant] = append(p.byTenant[v.task.Tenant], v)
			p.relate(v)
		}
	}
	p.progress.Advance(h.CoveredSequence)
}

// place takes one entry's refusals and view, and returns the view, nil
// for a task that has none; the caller holds p.mu and puts the view in
// the lists.
func (p *Projection) place(e *stewardv1.TaskViewSnapshot, covered uint64) *view {
	if e.Broken != "" {
		p.broken[e.TaskId] = e.Broken
	}
	if e.Refused > 0 {
		p.refused[e.TaskId] = int(e.Refused)
		p.rejected += int(e.Refused)
	}
	if e.Task == nil {
		return nil
	}
	v := &view{task: e.Task, at: map[string]int{}, answered: e.Answered, spent: spend{e.SpentTokens, e.SpentCostMicros}}
	v.index()
	v.recoveries = recoveriesOf(e)
	if e.Evicted {
		v.cold, v.at = true, nil
		p.pendingSince(v, e, covered)
	}
	p.tasks[e.TaskId] = v
	return v
}

func recoveriesOf(e *stewardv1.TaskViewSnapshot) recoveries {
	var r recoveries
	for _, d := range e.UnknownRecoveries {
		r.took[fromUnknownOutcome] = append(r.took[fromUnknownOutcome], d.AsDuration())
	}
	for _, d := range e.StallRecoveries {
		r.took[fromStall] = append(r.took[fromStall], d.AsDuration())
	}
	if len(e.UnknownSince) > 0 {
		r.unknownSince = make(map[string]time.Time, len(e.UnknownSince))
		for a, at := range e.UnknownSince {
			r.unknownSince[a] = at.AsTime()
		}
	}
	if e.StalledAt != nil {
		r.stalledAt = e.StalledAt.AsTime()
	}
	return r
}

// folded reports whether rec is already in the task's view from the
// snapshot it started from; the caller holds p.mu. Once the fold is past
// every entry's folded_through, the map is dropped.
func (p *Projection) folded(rec *stewardv1.EventRecord) bool {
	if p.foldedThrough == nil {
		return false
	}
	if rec.Sequence > p.skipUntil {
		p.foldedThrough = nil
		return false
	}
	return rec.Sequence <= p.foldedThrough[rec.Event.TaskId]
}

// sortByHead sorts entries by their chain heads, the latest first.
func sortByHead(entries []*stewardv1.TaskViewSnapshot) {
	slices.SortFunc(entries, func(a, b *stewardv1.TaskViewSnapshot) int {
		return cmp.Compare(b.Task.LastSequence, a.Task.LastSequence)
	})
}
