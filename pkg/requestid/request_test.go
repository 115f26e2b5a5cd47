package requestid_test

import (
	"context"
	"testing"

	"github.com/steward-run/steward/pkg/errs"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/requestid"
	"github.com/steward-run/steward/pkg/stewardtest"
	"github.com/steward-run/steward/pkg/taskstore"
)

// TestRequestSettle: a command begun under a request id records under the
// id's event id; ended, the id stays spent unless the command was refused
// with nothing recorded, which frees it for another use.
func TestRequestSettle(t *testing.T) {
	log, _ := stewardtest.OpenLog(t)
	ctx := context.Background()
	s := requestid.ForPrincipal("user:ana")
	for _, tc := range []struct {
		name     string
		err      error
		recorded bool
		freed    bool
	}{
		{"done", nil, false, false},
		{"refused", errs.New(errs.FailedPrecondition, "task is paused"), false, true},
		{"refused, but recorded", errs.New(errs.FailedPrecondition, "task is paused"), true, false},
		{"maybe recorded", errs.New(errs.Conflict, "try again"), false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rid := "r-" + tc.name
			r, err := requestid.Begin(ctx, taskstore.New(log), s, requestid.PauseTask, "t1", rid, &stewardv1.PauseTaskRequest{TaskId: "t1", Reason: "hold"},
				requestid.RecordedBy(func(context.Context) bool { return tc.recorded }))
			if err != nil {
				t.Fatal(err)
			}
			if want := s.EventID("t1", requestid.PauseTask, rid); r.EventID() != want {
				t.Errorf("EventID() = %s, want %s", r.EventID(), want)
			}
			r.Settle(ctx, &tc.err)
			_, err = requestid.Begin(ctx, taskstore.New(log), s, requestid.CancelTask, "t1", rid, &stewardv1.CancelTaskRequest{TaskId: "t1"})
			if freed := err == nil; freed != tc.freed {
				t.Errorf("another command under the id after %s: %v; want it freed: %t", tc.name, err, tc.freed)
			}
		})
	}
	r, err := requestid.Begin(ctx, taskstore.New(log), s, requestid.PauseTask, "t1", "", &stewardv1.PauseTaskRequest{TaskId: "t1"})
	if err != nil || r.EventID() != "" {
		t.Fatalf("without a request id: %q, %v; want no event id", r.EventID(), err)
	}
	var refused error = errs.New(errs.Invalid, "bad")
	r.Settle(ctx, &refused) // settles nothing
}
