package taskstore

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"

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
// Load reads only what is new: it keeps the fold of each task it has seen
// and folds the events appended since (see cache). The task returned is
// the caller's own copy, but for its parts (its contract, its action
// entries, …: task.Parts), which it shares with the fold and must not
// change (see copyOut).
func (s *Store) Load(ctx context.Context, taskID string) (*stewardv1.Task, History, error) {
	e := s.cache.entry(taskID)
	if err := e.hold(ctx); err != nil {
		return nil, nil, errs.Wrap(errs.Unavailable, err, "read task %s", taskID)
	}
	defer e.release()
	if err := e.catchUp(ctx, s, taskID); err != nil {
		return nil, nil, err
	}
	return e.copyOut(), e.history(), nil
}

// LoadSince is Load for a reaction to the task's event at sequence seq: a
// fold this process keeps that already includes seq is taken as it is,
// without a read. What the reaction then writes is decided again on the
// task as the log has it (Write), so a fold that is behind by events after
// seq costs nothing but a lost race.
func (s *Store) LoadSince(ctx context.Context, taskID string, seq uint64) (*stewardv1.Task, History, error) {
	e := s.cache.entry(taskID)
	if err := e.hold(ctx); err != nil {
		return nil, nil, errs.Wrap(errs.Unavailable, err, "read task %s", taskID)
	}
	defer e.release()
	if e.task == nil || e.task.LastSequence < seq {
		if err := e.reach(ctx, s, taskID, seq); err != nil {
			return nil, nil, err
		}
	}
	return e.copyOut(), e.history(), nil
}

// Peek is LoadSince for a reaction that only looks before it decides to
// do anything: fn sees the fold itself, held, without a copy. fn must
// not keep or change the task, nor read or write a task through this
// package (the same task would deadlock).
func (s *Store) Peek(ctx context.Context, taskID string, seq uint64, fn func(t *stewardv1.Task)) error {
	e := s.cache.entry(taskID)
	if err := e.hold(ctx); err != nil {
		return errs.Wrap(errs.Unavailable, err, "read task %s", taskID)
	}
	defer e.release()
	if e.task == nil || e.task.LastSequence < seq {
		if err := e.reach(ctx, s, taskID, seq); err != nil {
			return err
		}
	}
	fn(e.task)
	return nil
}

// Build decides, from the task as it is now, the one event to append, or
// nil for nothing to do. It is a decision on the task, made while the
// task is held: it must not keep or change the task it is given, nor read
// or write any task through this package (the same task would deadlock).
// The event it returns is handed over: once appended, the task keeps its
// messages without a copy, so neither the event nor any message in it may
// be changed after (checked in race-detector builds: see take).
type Build func(t *stewardv1.Task) (*stewardv1.Event, error)

// Write is every plane's write loop: bring the task's fold up to date,
// build the event, dry-run it through the fold (an illegal step appends
// nothing), append it conditionally on the task's last sequence, and on a
// lost race start over. An event whose id is already in the task's history
// is not appended again: that makes a redelivered reaction or a retried
// command a no-op. The fold is this process's own, changed in place, so a
// write costs nothing in the size of the task.
func (s *Store) Write(ctx context.Context, taskID string, build Build) error {
	_, err := s.writeLoop(ctx, taskID, build, false, true)
	return err
}

// Update is Write for a caller that wants the task as it is after: a copy,
// as Load's, which costs the task's top level and its lists.
func (s *Store) Update(ctx context.Context, taskID string, build Build) (*stewardv1.Task, error) {
	return s.writeLoop(ctx, taskID, build, true, true)
}

// writeLoop is Write and Update; foldFirst says whether its first try may
// build on the fold as it is (not after UpdateFrom's own try on it lost).
func (s *Store) writeLoop(ctx context.Context, taskID string, build Build, copyOut, foldFirst bool) (*stewardv1.Task, error) {
	for attempt := range maxConflictRetries {
		t, err := s.writeOnce(ctx, taskID, build, copyOut, foldFirst && attempt == 0)
		if !errors.Is(err, eventlog.ErrConflict) {
			return t, err
		}
		if err := pause(ctx, attempt); err != nil {
			return nil, err
		}
	}
	return nil, errs.New(errs.Conflict, "task %s is changing too fast; try again", taskID)
}

// writeOnce is one try of the write loop, holding the task's entry: it
// returns eventlog.ErrConflict when another write came first. First, when
// the fold is likely current, it tries the write on the fold as it is,
// without a read: a fold is behind only when another process (or plane,
// in services mode) wrote since this one last read or wrote the task,
// and then the append is refused for its head, and costs a publish on top
// of the read. So a read that finds such events has the entry's next
// write read first as well (readFirst), until a read finds none.
func (s *Store) writeOnce(ctx context.Context, taskID string, build Build, copyOut, first bool) (*stewardv1.Task, error) {
	e := s.cache.entry(taskID)
	if err := e.hold(ctx); err != nil {
		return nil, errs.Wrap(errs.Unavailable, err, "write task %s", taskID)
	}
	defer e.release()
	after := func() *stewardv1.Task {
		if copyOut {
			return e.copyOut()
		}
		return nil
	}
	if first && e.task != nil && !e.readFirst && e.appendOn(ctx, s.log, build) {
		return after(), nil
	}
	at := e.task.GetLastSequence()
	if err := e.catchUp(ctx, s, taskID); err != nil {
		return nil, err
	}
	e.readFirst = e.task.GetLastSequence() != at
	ev, err := build(e.task)
	if err != nil || ev == nil {
		return after(), err
	}
	if e.history().Has(ev.EventId) {
		return after(), nil // already on the log, and in the task
	}
	if err := task.Check(e.task, ev); err != nil {
		return nil, err
	}
	rec, err := s.log.Append(ctx, eventlog.HeadOf(e.task), ev)
	if err != nil {
		return nil, err
	}
	if rec.Event != ev {
		// A retried append stored before: read the task on to it.
		if err := e.catchUp(ctx, s, taskID); err != nil {
			return nil, err
		}
		return after(), nil
	}
	if err := e.take(ev, rec.Sequence); err != nil {
		return nil, errs.Wrap(errs.Corrupt, err, "task %s", taskID)
	}
	return after(), nil
}

// UpdateFrom is Update for a caller that holds the task as this process
// last loaded or wrote it: the first try builds on t without reading the
// log again, which is the common case of a plane's consecutive writes to
// one task. Only an append that lands shows that t was current, so
// anything else — a lost race, nothing to append, an error, a step the
// fold refuses, a task this process no longer keeps — is decided again by
// Update on the task as it is. t is the caller's own (from Load or
// Update), unchanged since, and becomes the task after; the caller must
// not use it otherwise once passed.
func (s *Store) UpdateFrom(ctx context.Context, t *stewardv1.Task, build Build) (*stewardv1.Task, error) {
	taskID := t.GetContract().GetTaskId()
	e := s.cache.entry(taskID)
	if err := e.hold(ctx); err != nil {
		return nil, errs.Wrap(errs.Unavailable, err, "write task %s", taskID)
	}
	ids, at := e.ids, e.task.GetLastSequence()
	e.release()
	if ids.covers(t.GetLastSequence()) {
		if after, ok := s.appendOn(ctx, e, t, history{set: ids, upTo: t.GetLastSequence()}, build); ok {
			return after, nil
		}
		// The entry's fold is worth a try only if it was further than t.
		return s.writeLoop(ctx, taskID, build, true, at > t.GetLastSequence())
	}
	return s.Update(ctx, taskID, build)
}

// appendOn is UpdateFrom's first try: ok only if build's event was
// appended on t. The entry takes the event too if it stood where t did.
func (s *Store) appendOn(ctx context.Context, e *entry, t *stewardv1.Task, h History, build Build) (*stewardv1.Task, bool) {
	ev, err := build(t)
	if err != nil || ev == nil || h.Has(ev.EventId) || task.Check(t, ev) != nil {
		return nil, false
	}
	head := eventlog.HeadOf(t)
	rec, err := s.log.TryAppend(ctx, head, ev)
	if err != nil || rec.Event != ev {
		return nil, false
	}
	if err := task.Apply(t, rec.Event, rec.Sequence); err != nil {
		return nil, false
	}
	if e.hold(ctx) != nil {
		return t, true // the entry reads it on its next catch-up
	}
	defer e.release()
	if e.task.GetLastSequence() == head.Sequence {
		_ = e.take(ev, rec.Sequence)
	}
	return t, true
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

// appendOn tries build's event on the entry's fold as it is, which the
// caller holds; true only if it was appended. Anything else — nothing to
// append, an error, a refusal, a lost race — may come of a fold that is
// behind, so the caller decides again after reading what is new.
func (e *entry) appendOn(ctx context.Context, log *eventlog.Log, build Build) bool {
	ev, err := build(e.task)
	if err != nil || ev == nil || e.history().Has(ev.EventId) || task.Check(e.task, ev) != nil {
		return false
	}
	rec, err := log.TryAppend(ctx, eventlog.HeadOf(e.task), ev)
	if err != nil || rec.Event != ev {
		return false
	}
	return e.take(ev, rec.Sequence) == nil
}
