package control

import (
	"context"
	"strings"
	"sync"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/steward-run/steward/pkg/action"
	"github.com/steward-run/steward/pkg/event"
	"github.com/steward-run/steward/pkg/eventlog"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// usageTypes are the events usage folds: a task's start and end, its
// plans and its stored artifacts.
var usageTypes = []string{
	event.TypeFor[*stewardv1.TaskCreated](),
	event.TypeFor[*stewardv1.PlanSubmitted](),
	event.TypeFor[*stewardv1.ArtifactSubmitted](),
	event.TypeFor[*stewardv1.TaskCancelled](),
	event.TypeFor[*stewardv1.TaskFailed](),
	event.TypeFor[*stewardv1.TaskAccepted](),
	event.TypeFor[*stewardv1.TaskProduced](),
}

// catchUpWait bounds how long a command waits for usage to read the log
// up to now before it is answered Unavailable.
const catchUpWait = 5 * time.Second

// owner is whom a task's usage counts against: the principal that
// created it, in its tenant. An owner with no principal is the tenant as
// a whole.
type owner struct{ tenant, principal string }

func (o owner) whole() owner { return owner{tenant: o.tenant} }

// tally is what an owner holds: running (not ended) tasks, the bytes of
// those tasks' current plans, and the bytes of artifact content stored
// for its tasks, which nothing frees.
type tally struct{ running, planBytes, contentBytes int64 }

func (t *tally) add(d tally) {
	t.running += d.running
	t.planBytes += d.planBytes
	t.contentBytes += d.contentBytes
}

// running is what usage knows of a task that has not ended.
type running struct {
	owner     owner
	planBytes int64
}

// hold is a command's admitted use, counted from its admission until
// usage has read the event that records it (seq), or until the command
// fails (seq 0 and released): what keeps two commands on one replica
// from both taking the last of a quota.
type hold struct {
	owner owner
	d     tally
	seq   uint64
	task  string // the task a creation's hold opens, else ""
}

// usage is what each principal and tenant holds, folded from the log by
// a reader that follows usageTypes: rebuilt from the start at each
// process start, so it holds across restarts and is the same on every
// replica once each has read as far. It is safe for concurrent use.
type usage struct {
	log      *eventlog.Log
	progress eventlog.Progress
	start    sync.Once
	stop     context.Context // ends the reader: the plane's Stop
	reading  sync.WaitGroup  // the reader, once started

	mu      sync.Mutex
	tasks   map[string]running
	tallies map[owner]*tally
	holds   map[*hold]struct{}
	// stored is the hash of each content an artifact has named in
	// Steward's store: content is charged once, to the submitter whose
	// artifact named it first, as the store keeps identical bytes once.
	stored map[string]struct{}
}

func newUsage(log *eventlog.Log, stop context.Context) *usage {
	return &usage{log: log, stop: stop, tasks: map[string]running{}, tallies: map[owner]*tally{},
		holds: map[*hold]struct{}{}, stored: map[string]struct{}{}}
}

// Progress implements eventlog.Reader.
func (u *usage) Progress() *eventlog.Progress { return &u.progress }

// Skip implements eventlog.Reader: an event that cannot be read is set
// aside by the log, and counts for nothing here.
func (u *usage) Skip(seq uint64, _ error) { u.progress.Advance(seq) }

// Apply implements eventlog.Reader. Each event is applied once, in
// order; a task's end is counted once, however many end events follow.
func (u *usage) Apply(rec *stewardv1.EventRecord) error {
	u.mu.Lock()
	defer u.mu.Unlock()
	ev := rec.Event
	switch p := ev.Payload.(type) {
	case *stewardv1.Event_TaskCreated:
		if _, ok := u.tasks[ev.TaskId]; !ok {
			o := owner{tenant: p.TaskCreated.Tenant, principal: ev.GetActor().GetPrincipal()}
			u.tasks[ev.TaskId] = running{owner: o}
			u.charge(o, tally{running: 1})
		}
		for h := range u.holds {
			if h.task == ev.TaskId {
				// Read before its command's done could say seq: it is
				// in the tallies now, and counted twice if kept.
				delete(u.holds, h)
			}
		}
	case *stewardv1.Event_PlanSubmitted:
		if r, ok := u.tasks[ev.TaskId]; ok {
			n := int64(proto.Size(p.PlanSubmitted.Plan))
			u.charge(r.owner, tally{planBytes: n - r.planBytes})
			r.planBytes = n
			u.tasks[ev.TaskId] = r
		}
	case *stewardv1.Event_ArtifactSubmitted:
		a := p.ArtifactSubmitted.Artifact
		if r, ok := u.tasks[ev.TaskId]; ok && u.adds(a) > 0 {
			u.stored[a.GetSha256()] = struct{}{}
			u.charge(owner{tenant: r.owner.tenant, principal: ev.GetActor().GetPrincipal()}, tally{contentBytes: a.GetSizeBytes()})
		}
	default:
		if r, ok := u.tasks[ev.TaskId]; ok && ends(ev) {
			u.charge(r.owner, tally{running: -1, planBytes: -r.planBytes})
			delete(u.tasks, ev.TaskId)
		}
	}
	for h := range u.holds {
		if h.seq != 0 && h.seq <= rec.Sequence {
			delete(u.holds, h) // counted in the tallies from now on
		}
	}
	u.progress.Advance(rec.Sequence)
	return nil
}

// adds returns the bytes artifact a adds to Steward's store as far as
// usage has read: its size, unless its content is elsewhere or named
// before. The caller holds mu.
func (u *usage) adds(a *stewardv1.Artifact) int64 {
	if _, named := u.stored[a.GetSha256()]; named || !storedHere(a) {
		return 0
	}
	return a.GetSizeBytes()
}

// storedHere reports whether a's content is in Steward's results store:
// inline content, stored there as it is submitted, or a reference to
// content there.
func storedHere(a *stewardv1.Artifact) bool {
	return strings.HasPrefix(a.GetUri(), "kv://"+action.ResultBucket+"/")
}

// ends reports whether ev ends its task: a cancel, a failure, an
// acceptance, or a production whose checks all passed with no review to
// wait for (the fold accepts it then).
func ends(ev *stewardv1.Event) bool {
	switch p := ev.Payload.(type) {
	case *stewardv1.Event_TaskCancelled, *stewardv1.Event_TaskFailed, *stewardv1.Event_TaskAccepted:
		return true
	case *stewardv1.Event_TaskProduced:
		if p.TaskProduced.ReviewRequired {
			return false
		}
		for _, c := range p.TaskProduced.Checks {
			if !c.Passed {
				return false
			}
		}
		return true
	}
	return false
}

// charge adds d to o's tally and its tenant's.
func (u *usage) charge(o owner, d tally) {
	for _, k := range []owner{o, o.whole()} {
		t := u.tallies[k]
		if t == nil {
			t = &tally{}
			u.tallies[k] = t
		}
		t.add(d)
		if *t == (tally{}) {
			delete(u.tallies, k) // nothing held: keep no entry
		}
	}
}

// read starts the reader, once: at the plane's start, so that it has
// read the log by the first command, or at that command.
func (u *usage) read() {
	u.start.Do(func() { u.reading.Go(func() { u.log.KeepReadingTypes(u.stop, u, usageTypes...) }) })
}

// catchUp waits until the reader has read every event of usageTypes on
// the log now, so that what another replica, or this process before a
// restart, recorded is counted.
func (u *usage) catchUp(ctx context.Context) error {
	u.read()
	ctx, cancel := context.WithTimeout(ctx, catchUpWait)
	defer cancel()
	return eventlog.CatchUp(ctx, u, func(ctx context.Context) (uint64, error) { return u.log.LastOfTypes(ctx, usageTypes...) })
}

// held returns what o holds now, its admitted commands' holds included.
// The caller holds mu.
func (u *usage) held(o owner) tally {
	var t tally
	if have := u.tallies[o]; have != nil {
		t = *have
	}
	for h := range u.holds {
		if h.owner == o || (o.principal == "" && h.owner.tenant == o.tenant) {
			t.add(h.d)
		}
	}
	return t
}

// keep keeps h counted until usage has read seq, the sequence of the
// event that records it.
func (u *usage) keep(h *hold, seq uint64) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if seq <= u.progress.Applied() {
		delete(u.holds, h)
		return
	}
	h.seq = seq
}

// release drops h: its command recorded nothing.
func (u *usage) release(h *hold) {
	u.mu.Lock()
	defer u.mu.Unlock()
	delete(u.holds, h)
}
