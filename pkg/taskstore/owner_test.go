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

// TestALoggedEventFromTheWrongPlaneIsRefused: an event stored on the log
// by a plane that does not own its type (written past taskstore.Update,
// which would have refused it) makes the task's history fail the fold,
// on a real log.
func TestALoggedEventFromTheWrongPlaneIsRefused(t *testing.T) {
	log, _ := stewardtest.OpenLog(t)
	ctx := context.Background()
	created, err := event.New(event.Meta{TaskID: "t1", Actor: &stewardv1.Actor{Principal: "user:a", Plane: event.PlaneControl}},
		&stewardv1.TaskCreated{Contract: &stewardv1.TaskContract{TaskId: "t1"}})
	if err != nil {
		t.Fatal(err)
	}
	rec, err := log.Append(ctx, eventlog.Head{}, created)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := tasksOf(log).Load(ctx, "t1"); err != nil {
		t.Fatal(err)
	}
	forged, err := event.New(event.Meta{TaskID: "t1", Actor: &stewardv1.Actor{Principal: "worker", Plane: event.PlaneExecution}}, &stewardv1.TaskCancelled{Reason: "not mine to say"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tasksOf(log).Update(ctx, "t1", func(*stewardv1.Task) (*stewardv1.Event, error) { return forged, nil }); !errs.Is(err, errs.FailedPrecondition) {
		t.Fatalf("Update of a cancel by the execution plane: %v, want refused", err)
	}
	if _, err := log.Append(ctx, eventlog.Head{Sequence: rec.Sequence, Hash: rec.Event.Hash}, forged); err != nil {
		t.Fatal(err)
	}
	if _, _, err := tasksOf(log).Load(ctx, "t1"); !errs.Is(err, errs.Corrupt) {
		t.Fatalf("Load of a history holding it: %v, want corrupt", err)
	}
}
