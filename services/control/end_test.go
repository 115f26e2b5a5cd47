package control_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/steward-run/steward/pkg/errs"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/services/control"
)

func TestFailTaskNamesTheBadField(t *testing.T) {
	r := idleHarness(t)
	ctl := r.ctl
	tests := []struct {
		name  string
		req   *stewardv1.FailTaskRequest
		code  errs.Code
		field string
	}{
		{"no task id", &stewardv1.FailTaskRequest{Reason: "x"}, errs.Invalid, "task_id"},
		{"bad task id", &stewardv1.FailTaskRequest{TaskId: "a.b"}, errs.Invalid, "task_id"},
		{"long reason", &stewardv1.FailTaskRequest{TaskId: "t1", Reason: strings.Repeat("r", control.MaxReasonLen+1)}, errs.TooLarge, "reason"},
		{"long request id", &stewardv1.FailTaskRequest{TaskId: "t1", RequestId: strings.Repeat("r", control.MaxRequestID+1)}, errs.TooLarge, "request_id"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ctl.FailTask(context.Background(), "ops", tt.req)
			var e *errs.Error
			if !errors.As(err, &e) || e.Code != tt.code || e.Field != tt.field {
				t.Fatalf("err = %v, want %s naming %s", err, tt.code, tt.field)
			}
		})
	}
}

// TestFailTaskWithRequestIDIsSafeToRetry: the same request id again
// returns the failed task and appends nothing; another request id is an
// illegal transition.
func TestFailTaskWithRequestIDIsSafeToRetry(t *testing.T) {
	r := idleHarness(t)
	ctl := r.ctl
	ctx := context.Background()
	tk, _, err := ctl.CreateTask(ctx, "t", validRequest("fail-retry"))
	if err != nil {
		t.Fatal(err)
	}
	id := tk.Contract.TaskId
	for range 2 {
		got, err := ctl.FailTask(ctx, "ops", &stewardv1.FailTaskRequest{TaskId: id, RequestId: "f-1", Reason: "broken"})
		if err != nil {
			t.Fatal(err)
		}
		if got.Status != stewardv1.TaskStatus_TASK_STATUS_FAILED || got.StatusReason != "broken" || got.EventCount != 2 {
			t.Fatalf("after fail: %s (%s), %d events", got.Status, got.StatusReason, got.EventCount)
		}
	}
	if _, err := ctl.FailTask(ctx, "ops", &stewardv1.FailTaskRequest{TaskId: id, RequestId: "f-2"}); !errs.Is(err, errs.FailedPrecondition) {
		t.Fatalf("failing a failed task: %v, want failed precondition", err)
	}
	if _, err := ctl.FailTask(ctx, "ops", &stewardv1.FailTaskRequest{TaskId: "nope"}); !errs.Is(err, errs.NotFound) {
		t.Fatalf("failing an unknown task: %v, want not found", err)
	}
}
