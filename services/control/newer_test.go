package control_test

import (
	"context"
	"testing"

	"github.com/steward-run/steward/pkg/errs"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/stewardtest"
	"github.com/steward-run/steward/services/control"
)

// TestControlLeavesANewerBuildsTaskToIt: a task whose chain holds an event
// of a type this build does not know, as a newer control plane's replica
// beside it in a rolling upgrade may write, is not this plane's to fold.
// Its reaction to the task's creation neither starts the task nor sets the
// event aside: it is redelivered, for a newer replica to take. A command
// on the task is unavailable (the client retries, and may reach a newer
// replica), not an internal error.
func TestControlLeavesANewerBuildsTaskToIt(t *testing.T) {
	r := idleHarness(t)
	ctx := context.Background()
	tk, _, err := r.ctl.CreateTask(ctx, "t", validRequest("newer"))
	if err != nil {
		t.Fatal(err)
	}
	id := tk.Contract.TaskId
	recs, err := r.Log.ReadAfter(ctx, id, 0)
	if err != nil || len(recs) != 1 {
		t.Fatalf("read the creation: %d events, %v", len(recs), err)
	}
	newer := stewardtest.AppendNewer(t, r.Log, r.JS, recs[0])
	r.start(t)
	stewardtest.LeftForNewer(t, r.Log, r.JS, control.PlaneName, recs[0].Sequence)
	if last, err := r.Log.LastSequence(ctx, id); err != nil || last != newer.Sequence {
		t.Errorf("the task's last event is %d (%v), want the newer build's %d: this plane appended to a task it cannot fold", last, err, newer.Sequence)
	}
	_, err = r.ctl.CancelTask(ctx, "ops", &stewardv1.CancelTaskRequest{TaskId: id})
	if errs.CodeOf(err) != errs.Unavailable {
		t.Errorf("cancel: %v (%v), want unavailable", err, errs.CodeOf(err))
	}
}
