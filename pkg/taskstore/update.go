package taskstore

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/steward-run/steward/pkg/errs"
	"github.com/steward-run/steward/pkg/eventlog"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/task"
)

// maxConflictRetries bounds how often Update re-reads after losing a race
// for the task's next sequence. Between tries it waits a random while that
// grows with each loss, so writers racing on one busy task spread out
// instead of colliding again in lockstep.
const maxConflictRetries = 64

// History tells whether an event is in a task's history.
type History interface{ Has(eventID string) bool }

// Load reads and folds a task; a task with no events is NotFound. It also
// returns the task's history as of the task returned, so a caller can tell
// that an event it means to append is already there, and find its effect.
//
// Load reads only what is new: it keeps the last fold of each task it has
// seen and folds the events appended since (see cache). The task returned
// is the caller's own.
func Load(ctx context.Context, log *eventlog.Log, taskID string) (*stewardv1.Task, History, error) {
	c := cacheFor(log)
	base := c.get(taskID)
	if base == nil {
		base = &folded{}
	}
	recs, err := log.ReadAfter(ctx, taskID, base.task.GetLastSequence())
	if err != nil {
		return nil, nil, err
	}
	if base.task == nil && len(recs) == 0 {
		return nil, nil, errs.New(errs.NotFound, "task %s not found", taskID)
	}
	f := base
	if len(recs) > 0 {
		if f, err = base.extend(recs); err != nil {
			return nil, nil, errs.Wrap(errs.Corrupt, err, "task %s", taskID)
		}
		c.put(taskID, f)
	}
	return proto.CloneOf(f.task), history{set: f.ids, upTo: f.task.GetLastSequence()}, nil
}

// Build decides, from the task as it is now, the one event to append, or
// nil for nothing to do.
type Build func(t *stewardv1.Task) (*stewardv1.Event, error)

// Update is every plane's write loop: load and fold the task, build the
// event, dry-run it through the fold (an illegal step appends nothing),
// append it conditionally on the task's last sequence, and on a lost race
// start over. An event whose id is already in the task's history is not
// appended again: that makes a redelivered reaction or a retried command a
// no-op. It returns the task as it is after.
func Update(ctx context.Context, log *eventlog.Log, taskID string, build Build) (*stewardv1.Task, error) {
	for attempt := range maxConflictRetries {
		t, h, err := Load(ctx, log, taskID)
		if err != nil {
			return nil, err
		}
		after, err := write(ctx, log, t, h, build)
		if !errors.Is(err, eventlog.ErrConflict) {
			return after, err
		}
		if err := pause(ctx, attempt); err != nil {
			return nil, err
		}
	}
	return nil, errs.New(errs.Conflict, "task %s is changing too fast; try again", taskID)
}

// UpdateFrom is Update for a caller that holds the task as this process
// last loaded or wrote it: the first try builds on t without reading the
// log again, which is the common case of a plane's consecutive writes to
// one task. Only an append that lands shows that t was current, so
// anything else — a lost race, nothing to append, an error, a step the
// fold refuses, a task this process no longer keeps — is decided again by
// Update on the task as it is. t is the caller's own (from Load or
// Update) and becomes the task after; the caller must not use it
// otherwise once passed.
func UpdateFrom(ctx context.Context, log *eventlog.Log, t *stewardv1.Task, build Build) (*stewardv1.Task, error) {
	taskID := t.GetContract().GetTaskId()
	if f := cacheFor(log).get(taskID); f != nil && f.ids.covers(t.GetLastSequence()) {
		if after, ok := appendOn(ctx, log, t, history{set: f.ids, upTo: t.GetLastSequence()}, build); ok {
			return after, nil
		}
	}
	return Update(ctx, log, taskID, build)
}

// appendOn is UpdateFrom's first try: ok only if build's event was
// appended on t.
func appendOn(ctx context.Context, log *eventlog.Log, t *stewardv1.Task, h History, build Build) (*stewardv1.Task, bool) {
	ev, err := build(t)
	if err != nil || ev == nil || h.Has(ev.EventId) || task.Check(t, ev) != nil {
		return nil, false
	}
	after, err := commit(ctx, log, t, ev)
	return after, err == nil
}

// write is one try of the write loop on t, with its history h: it returns
// eventlog.ErrConflict when another write came first.
func write(ctx context.Context, log *eventlog.Log, t *stewardv1.Task, h History, build Build) (*stewardv1.Task, error) {
	ev, err := build(t)
	if err != nil || ev == nil {
		return t, err
	}
	if h.Has(ev.EventId) {
		return t, nil // already on the log, and in t
	}
	if err := task.Check(t, ev); err != nil {
		return nil, err
	}
	return commit(ctx, log, t, ev)
}

// commit appends ev on t conditionally and folds it into t.
func commit(ctx context.Context, log *eventlog.Log, t *stewardv1.Task, ev *stewardv1.Event) (*stewardv1.Task, error) {
	head := eventlog.HeadOf(t)
	rec, err := log.Append(ctx, head, ev)
	if err != nil {
		return nil, err
	}
	taskID := t.Contract.GetTaskId()
	if rec.Event != ev {
		// A retried append stored before: the task has moved on from
		// t, so read it afresh.
		t, _, err := Load(ctx, log, taskID)
		return t, err
	}
	if err := task.Apply(t, rec.Event, rec.Sequence); err != nil {
		return nil, err
	}
	if f := cacheFor(log).get(taskID); f != nil {
		// The next write from here finds it in the task's history without
		// a read (UpdateFrom).
		f.ids.appended(ev.EventId, head.Sequence, rec.Sequence)
	}
	return t, nil
}

// pause waits a random time up to 2^attempt × 100µs, capped at 50ms.
func pause(ctx context.Context, attempt int) error {
	ceiling := min(100*time.Microsecond<<min(attempt, 10), 50*time.Millisecond)
	select {
	case <-time.After(rand.N(ceiling) + time.Microsecond):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
