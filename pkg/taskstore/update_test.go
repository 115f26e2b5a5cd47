package taskstore_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/steward-run/steward/pkg/errs"
	"github.com/steward-run/steward/pkg/event"
	"github.com/steward-run/steward/pkg/eventlog"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/stewardtest"
	"github.com/steward-run/steward/pkg/taskstore"
)

// TestUpdateFromBuildsOnTheTaskItIsGivenAndRereadsOnlyWhenItLost: a write
// from a task this process just wrote appends on it; a write from a task
// another writer has moved on from builds again on the task as it is; and
// an event already appended is not appended twice, on either path.
func TestUpdateFromBuildsOnTheTaskItIsGivenAndRereadsOnlyWhenItLost(t *testing.T) {
	log, _ := stewardtest.OpenLog(t)
	ctx := context.Background()
	const id = "from"
	t0 := stewardtest.Append(t, log, id, &stewardv1.TaskCreated{Contract: &stewardv1.TaskContract{Intent: "x"}}, &stewardv1.TaskStarted{})
	stale, _, err := tasksOf(log).Load(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	paused := stewardtest.Event(t, id, &stewardv1.TaskPaused{Reason: "one"})
	var built []uint64 // the last sequence of each task a build saw
	build := func(ev *stewardv1.Event) taskstore.Build {
		return func(t *stewardv1.Task) (*stewardv1.Event, error) {
			built = append(built, t.LastSequence)
			return ev, nil
		}
	}
	t1, err := tasksOf(log).UpdateFrom(ctx, t0, build(paused))
	if err != nil {
		t.Fatal(err)
	}
	if t1.Status != stewardv1.TaskStatus_TASK_STATUS_PAUSED || len(built) != 1 {
		t.Fatalf("after a write from the current task: %v with %d builds, want paused with 1", t1.Status, len(built))
	}
	// The same event again, from the task after it: found in the history
	// the write left, not appended.
	before := t1.LastSequence
	again, err := tasksOf(log).UpdateFrom(ctx, t1, build(paused))
	if err != nil || again.LastSequence != before {
		t.Fatalf("the same pause again: %v, last sequence %d, want %d", err, again.GetLastSequence(), before)
	}
	// From a task read before the pause: the first try loses the race
	// and the build runs again on the paused task.
	built = nil
	resumed := stewardtest.Event(t, id, &stewardv1.TaskResumed{})
	t2, err := tasksOf(log).UpdateFrom(ctx, stale, build(resumed))
	if err != nil {
		t.Fatal(err)
	}
	if t2.Status != stewardv1.TaskStatus_TASK_STATUS_RUNNING || len(built) != 2 || built[1] != before {
		t.Fatalf("after a write from a stale task: %v, builds on sequences %v; want running, built again on %d", t2.Status, built, before)
	}
	recs, err := log.Read(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	var types []string
	for _, r := range recs {
		types = append(types, r.Event.Type)
	}
	if want := []string{event.TypeTaskCreated, event.TypeTaskStarted, event.TypeTaskPaused, event.TypeTaskResumed}; len(types) != len(want) {
		t.Fatalf("the log holds %v, want %v", types, want)
	}
}

// TestAWaitForABusyTaskEndsWithItsContext: a task is held across a
// write's round trips to the log; whoever waits for it gives up when its
// own context ends, not when the writer is done.
func TestAWaitForABusyTaskEndsWithItsContext(t *testing.T) {
	log, _ := stewardtest.OpenLog(t)
	const id = "busy"
	stewardtest.Append(t, log, id, &stewardv1.TaskCreated{Contract: &stewardv1.TaskContract{Intent: "x"}})
	inBuild, release := make(chan struct{}), make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- tasksOf(log).Write(context.Background(), id, func(*stewardv1.Task) (*stewardv1.Event, error) {
			close(inBuild)
			<-release // a writer stuck on the network
			return nil, nil
		})
	}()
	<-inBuild
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, _, err := tasksOf(log).Load(ctx, id); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a read of a held task past its deadline: %v, want the deadline", err)
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if _, _, err := tasksOf(log).Load(context.Background(), id); err != nil {
		t.Fatalf("once the writer is done: %v", err)
	}
}

// TestAWriteStillSeesWritesBehindItsBack: a write builds on the fold the
// store keeps without reading first; an event appended behind its back
// makes that append lose, and the write is then decided again on the task
// as the log has it.
func TestAWriteStillSeesWritesBehindItsBack(t *testing.T) {
	bus := stewardtest.StartBus(t)
	ctx := context.Background()
	log, err := eventlog.Open(ctx, bus.JS, eventlog.Config{})
	if err != nil {
		t.Fatal(err)
	}
	const id = "sole"
	stewardtest.Append(t, log, id, &stewardv1.TaskCreated{Contract: &stewardv1.TaskContract{Intent: "x"}}, &stewardv1.TaskStarted{})
	// The store keeps the fold as it is now (Append writes through a
	// store of its own).
	if _, _, err := tasksOf(log).Load(ctx, id); err != nil {
		t.Fatal(err)
	}
	// Behind the store's back: the task is paused.
	recs, err := log.Read(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	last := recs[len(recs)-1]
	if _, err := log.Append(ctx, eventlog.Head{Sequence: last.Sequence, Hash: last.Event.Hash}, stewardtest.Event(t, id, &stewardv1.TaskPaused{Reason: "behind"})); err != nil {
		t.Fatal(err)
	}
	var saw []stewardv1.TaskStatus
	pause, resume := stewardtest.Event(t, id, &stewardv1.TaskPaused{Reason: "stale"}), stewardtest.Event(t, id, &stewardv1.TaskResumed{})
	err = tasksOf(log).Write(ctx, id, func(t *stewardv1.Task) (*stewardv1.Event, error) {
		saw = append(saw, t.Status)
		if t.Status != stewardv1.TaskStatus_TASK_STATUS_PAUSED {
			return pause, nil
		}
		return resume, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	tk, _, err := tasksOf(log).Load(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if tk.Status != stewardv1.TaskStatus_TASK_STATUS_RUNNING || len(saw) != 2 || saw[1] != stewardv1.TaskStatus_TASK_STATUS_PAUSED {
		t.Fatalf("task %v after builds on %v; want running, decided again on the paused task", tk.Status, saw)
	}
}

// TestPeekReadsOnlyWhenTheFoldIsBehind: Peek shows the fold as it is when
// it holds the event the caller reacts to, and reads on to that event
// when it does not (here, one appended behind the store's back).
func TestPeekReadsOnlyWhenTheFoldIsBehind(t *testing.T) {
	log, _ := stewardtest.OpenLog(t)
	ctx := context.Background()
	const id = "peek"
	t0 := stewardtest.Append(t, log, id, &stewardv1.TaskCreated{Contract: &stewardv1.TaskContract{Intent: "x"}}, &stewardv1.TaskStarted{})
	peek := func(seq uint64) (stewardv1.TaskStatus, uint64) {
		t.Helper()
		var status stewardv1.TaskStatus
		var last uint64
		if err := tasksOf(log).Peek(ctx, id, seq, func(t *stewardv1.Task) { status, last = t.Status, t.LastSequence }); err != nil {
			t.Fatal(err)
		}
		return status, last
	}
	if status, last := peek(t0.LastSequence); status != stewardv1.TaskStatus_TASK_STATUS_RUNNING || last != t0.LastSequence {
		t.Fatalf("Peek at the fold's own event: %v at %d, want running at %d", status, last, t0.LastSequence)
	}
	rec, err := log.Append(ctx, eventlog.HeadOf(t0), stewardtest.Event(t, id, &stewardv1.TaskPaused{Reason: "behind"}))
	if err != nil {
		t.Fatal(err)
	}
	// Asked for an earlier event, the fold is taken as it is: no read.
	if status, _ := peek(t0.LastSequence); status != stewardv1.TaskStatus_TASK_STATUS_RUNNING {
		t.Fatalf("Peek at an event the fold holds read on: %v", status)
	}
	if status, last := peek(rec.Sequence); status != stewardv1.TaskStatus_TASK_STATUS_PAUSED || last != rec.Sequence {
		t.Fatalf("Peek at a newer event: %v at %d, want paused at %d", status, last, rec.Sequence)
	}
	if err := tasksOf(log).Peek(ctx, "nosuch", 1, func(*stewardv1.Task) { t.Error("Peek ran fn for a task with no events") }); !errs.Is(err, errs.NotFound) {
		t.Fatalf("Peek of a task with no events = %v, want not found", err)
	}
}
