package state

import (
	"sync"
	"time"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// Waiting returns how many watches and waiting GetAction calls follow
// taskID: a test waits for a call to be waiting before it changes the
// task.
func (p *Plane) Waiting(taskID string) int {
	p.views.watchers.mu.Lock()
	defer p.views.watchers.mu.Unlock()
	return len(p.views.watchers.byTask[taskID])
}

// Looks returns how many times the watchdog has looked at the tasks.
func (p *Plane) Looks() uint64 { return p.looks.Load() }

// Quiet returns the tasks the watchdog's look at now, with the re-drive
// bound redrive, finds stalled.
func (p *Projection) Quiet(now time.Time, redrive time.Duration) []string {
	return p.quiet(now, redrive)
}

// Summary is the timeline's sentence for ev, without a note.
func Summary(ev *stewardv1.Event) string { return summary(ev, "") }

// SnapshotCovered returns what the newest snapshot the plane loaded or
// wrote covers; 0 when it has neither.
func (p *Plane) SnapshotCovered() uint64 { return p.snap.covered.Load() }

// SnapshotBytes returns the size of the newest snapshot the plane wrote.
func (p *Plane) SnapshotBytes() uint64 { return p.snap.size.Load() }

// Evictions returns how many times the evictor has looked at the tasks.
func (p *Plane) Evictions() uint64 { return p.evictions.Load() }

// MaxColdReads is how many cold reads the plane folds at once.
const MaxColdReads = maxColdReads

// HoldStubs holds the plane's load of a snapshot's stubs until release;
// call it before Start.
func (p *Plane) HoldStubs() (release func()) {
	p.holdStubs = make(chan struct{})
	return sync.OnceFunc(func() { close(p.holdStubs) })
}

// FailFolds has the plane's next n folds of the evicted tasks from the
// log fail, as a read of the log would; call it before Start.
func (p *Plane) FailFolds(n int32) { p.foldsToFail.Store(n) }
