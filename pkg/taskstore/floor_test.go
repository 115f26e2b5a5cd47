package taskstore_test

import (
	"context"
	"testing"

	"github.com/steward-run/steward/pkg/errs"
	"github.com/steward-run/steward/pkg/event"
	"github.com/steward-run/steward/pkg/eventlog"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/stewardtest"
)

// TestAReadBehindItsFloorIsNotYet: a reader that must see a task up to a
// sequence (a reaction to one of its events) and reads less — a replica
// behind, a leader just elected — is told "not yet" (errs.Later), which a
// consumer redelivers, never NotFound or a task without the event, which
// it would act on. Without a floor the same read is what the log has.
func TestAReadBehindItsFloorIsNotYet(t *testing.T) {
	log, _ := stewardtest.OpenLog(t)
	ctx := context.Background()
	const id = "floored"
	tk := stewardtest.Append(t, log, id, &stewardv1.TaskCreated{Contract: &stewardv1.TaskContract{Intent: "x"}})
	ahead := tk.LastSequence + 7 // an event the read has not reached

	reads := map[string]func(context.Context, string) error{
		"Load": func(ctx context.Context, id string) error { _, _, err := tasksOf(log).Load(ctx, id); return err },
		"LoadSince": func(ctx context.Context, id string) error {
			_, _, err := tasksOf(log).LoadSince(ctx, id, ahead)
			return err
		},
		"Write": func(ctx context.Context, id string) error {
			return tasksOf(log).Write(ctx, id, func(*stewardv1.Task) (*stewardv1.Event, error) { return nil, nil })
		},
	}
	for name, read := range reads {
		if err := read(eventlog.WithReadFloor(ctx, id, ahead), id); !isLater(err) {
			t.Errorf("%s of a task read up to seq %d under a floor of %d: %v, want not yet", name, tk.LastSequence, ahead, err)
		}
		if err := read(eventlog.WithReadFloor(ctx, "no-such-task", ahead), "no-such-task"); !isLater(err) {
			t.Errorf("%s of a task with no events yet under a floor: %v, want not yet, not NotFound", name, err)
		}
		if err := read(eventlog.WithReadFloor(ctx, id, tk.LastSequence), id); err != nil {
			t.Errorf("%s at its floor: %v", name, err)
		}
		if err := read(eventlog.WithReadFloor(ctx, "another", ahead), id); err != nil {
			t.Errorf("%s under another task's floor: %v, want the task as the log has it", name, err)
		}
		if err := read(ctx, "no-such-task"); !errs.Is(err, errs.NotFound) {
			t.Errorf("%s of an unknown task without a floor: %v, want NotFound", name, err)
		}
	}
}

func isLater(err error) bool {
	_, ok := errs.LaterBy(err)
	return ok
}

// TestAReactionFoldsTheEventItWasHanded: a plane that keeps a fold of its
// own (services mode) and reacts to the task's next event folds the event
// it was handed instead of reading it again; an event that does not stand
// on the fold's head is read from the log as before. The handed event here
// was never appended, so only a fold of what was handed can hold it.
func TestAReactionFoldsTheEventItWasHanded(t *testing.T) {
	log, _ := stewardtest.OpenLog(t)
	ctx := context.Background()
	const id = "handed"
	tk := stewardtest.Append(t, log, id, &stewardv1.TaskCreated{Contract: &stewardv1.TaskContract{Intent: "x"}})
	tasks := tasksOf(log)
	if _, _, err := tasks.Load(ctx, id); err != nil {
		t.Fatal(err)
	}
	handed := func(prev []byte) *stewardv1.EventRecord {
		ev := stewardtest.Event(t, id, &stewardv1.TaskStarted{})
		if _, err := event.Seal(ev, prev); err != nil {
			t.Fatal(err)
		}
		return &stewardv1.EventRecord{Sequence: tk.LastSequence + 3, Event: ev}
	}

	astray := handed([]byte("not the head"))
	if _, _, err := tasks.LoadSince(eventlog.WithHandled(ctx, astray), id, astray.Sequence); !isLater(err) {
		t.Fatalf("a handed event not on the fold's head: %v, want the log read, which has not reached it (not yet)", err)
	}
	next := handed(tk.LastHash)
	got, _, err := tasks.LoadSince(eventlog.WithHandled(ctx, next), id, next.Sequence)
	if err != nil {
		t.Fatalf("the next event, handed: %v", err)
	}
	if got.LastSequence != next.Sequence || got.Status != stewardv1.TaskStatus_TASK_STATUS_RUNNING {
		t.Fatalf("after the handed start: seq %d, %v; want %d, running", got.LastSequence, got.Status, next.Sequence)
	}
}

// TestAReactionReadsOnlyTheGapBeforeItsEvent: a plane whose fold is
// behind the event it was handed reads the events between, from the log,
// and folds the handed one after them without reading it (it was never
// appended here).
func TestAReactionReadsOnlyTheGapBeforeItsEvent(t *testing.T) {
	log, _ := stewardtest.OpenLog(t)
	ctx := context.Background()
	const id = "gap"
	stewardtest.Append(t, log, id, &stewardv1.TaskCreated{Contract: &stewardv1.TaskContract{Intent: "x"}})
	tasks := tasksOf(log)
	if _, _, err := tasks.Load(ctx, id); err != nil {
		t.Fatal(err)
	}
	// Another plane moves the task on; this one's fold stays behind.
	between := stewardtest.Append(t, log, id, &stewardv1.TaskStarted{})
	ev := stewardtest.Event(t, id, &stewardv1.TaskPaused{Reason: "handed"})
	if _, err := event.Seal(ev, between.LastHash); err != nil {
		t.Fatal(err)
	}
	handed := &stewardv1.EventRecord{Sequence: between.LastSequence + 2, Event: ev}
	got, _, err := tasks.LoadSince(eventlog.WithHandled(ctx, handed), id, handed.Sequence)
	if err != nil {
		t.Fatalf("the fold one event behind the handed one: %v", err)
	}
	if got.LastSequence != handed.Sequence || got.Status != stewardv1.TaskStatus_TASK_STATUS_PAUSED {
		t.Fatalf("after the gap and the handed pause: seq %d, %v; want %d, paused", got.LastSequence, got.Status, handed.Sequence)
	}
}
