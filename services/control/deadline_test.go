package control_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/steward-run/steward/pkg/errs"
	"github.com/steward-run/steward/pkg/event"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/rpc"
)

// deadlineTask creates a task owned by user:own whose deadline is an hour
// from the harness's clock, or none, and returns its id.
func (r *harness) deadlineTask(t *testing.T, requestID string, withDeadline bool) string {
	t.Helper()
	req := validRequest(requestID)
	req.Contract.AccountableOwnerRef = "user:own"
	if withDeadline {
		req.Contract.Deadline = timestamppb.New(r.clock.Now().Add(time.Hour))
	}
	tk, _, err := r.ctl.CreateTask(context.Background(), "agent", req)
	if err != nil {
		t.Fatal(err)
	}
	return tk.Contract.TaskId
}

// TestExtendDeadline checks ExtendDeadline's input, who may call it, its
// record, and its request id: a repeat appends nothing.
func TestExtendDeadline(t *testing.T) {
	r := idleHarness(t)
	ctx := context.Background()
	id := r.deadlineTask(t, "dl", true)
	due := r.task(t, id).Contract.Deadline
	later := timestamppb.New(due.AsTime().Add(time.Hour))
	ext := func(who string, req *stewardv1.ExtendDeadlineRequest) (*stewardv1.Task, error) {
		return r.ctl.ExtendDeadline(ctx, who, req)
	}

	refusals := []struct {
		name  string
		who   string
		req   *stewardv1.ExtendDeadlineRequest
		code  errs.Code
		field string
	}{
		{"no reason", "user:own", &stewardv1.ExtendDeadlineRequest{TaskId: id, Deadline: later}, errs.Invalid, "reason"},
		{"no deadline", "user:own", &stewardv1.ExtendDeadlineRequest{TaskId: id, Reason: "r"}, errs.Invalid, "deadline"},
		{"invalid deadline", "user:own", &stewardv1.ExtendDeadlineRequest{TaskId: id, Reason: "r", Deadline: &timestamppb.Timestamp{Seconds: 1 << 62}}, errs.Invalid, "deadline"},
		{"past", "user:own", &stewardv1.ExtendDeadlineRequest{TaskId: id, Reason: "r", Deadline: timestamppb.New(r.clock.Now().Add(-time.Minute))}, errs.Invalid, "deadline"},
		{"not later", "user:own", &stewardv1.ExtendDeadlineRequest{TaskId: id, Reason: "r", Deadline: timestamppb.New(due.AsTime().Add(-time.Minute)), RequestId: "early"}, errs.Invalid, "deadline"},
		{"not the owner", "user:a", &stewardv1.ExtendDeadlineRequest{TaskId: id, Reason: "r", Deadline: later, RequestId: "not-mine"}, errs.PermissionDenied, ""},
		{"no such task", "user:own", &stewardv1.ExtendDeadlineRequest{TaskId: "nope", Reason: "r", Deadline: later}, errs.NotFound, ""},
	}
	for _, c := range refusals {
		t.Run(c.name, func(t *testing.T) {
			_, err := ext(c.who, c.req)
			if !errs.Is(err, c.code) {
				t.Fatalf("err = %v, want %v", err, c.code)
			}
			var e *errs.Error
			if errors.As(err, &e); e.Field != c.field {
				t.Errorf("err %v names %q, want %q", err, e.Field, c.field)
			}
		})
	}
	if n := r.counts(t, id)[event.TypeDeadlineExtended]; n != 0 {
		t.Fatalf("refusals recorded %d extensions", n)
	}

	req := &stewardv1.ExtendDeadlineRequest{TaskId: id, Reason: "the vendor is late", Deadline: later, RequestId: "ext-1"}
	for range 2 {
		tk, err := ext("user:own", req)
		if err != nil {
			t.Fatal(err)
		}
		if !tk.Contract.Deadline.AsTime().Equal(later.AsTime()) {
			t.Fatalf("deadline %v, want %v", tk.Contract.Deadline.AsTime(), later.AsTime())
		}
	}
	if n := r.counts(t, id)[event.TypeDeadlineExtended]; n != 1 {
		t.Fatalf("a repeated request recorded %d extensions, want 1", n)
	}
	var x *stewardv1.DeadlineExtended
	recs, err := r.Log.Read(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	for _, rec := range recs {
		if d := rec.Event.GetDeadlineExtended(); d != nil {
			x = d
			if rec.Event.Actor.GetPrincipal() != "user:own" {
				t.Errorf("recorded by %v", rec.Event.Actor)
			}
		}
	}
	if !x.Previous.AsTime().Equal(due.AsTime()) || !x.Deadline.AsTime().Equal(later.AsTime()) || x.Reason != req.Reason {
		t.Errorf("recorded %v, want from %v to %v with the reason", x, due.AsTime(), later.AsTime())
	}
	// The id used for another body is refused; the refused ones above
	// left theirs free.
	other := &stewardv1.ExtendDeadlineRequest{TaskId: id, Reason: "again", Deadline: timestamppb.New(later.AsTime().Add(time.Hour)), RequestId: "ext-1"}
	if _, err := ext("user:own", other); !errs.Is(err, errs.AlreadyExists) {
		t.Errorf("request id reused for another body: %v, want already exists", err)
	}
	other.RequestId = "early"
	if _, err := ext("user:own", other); err != nil {
		t.Errorf("a request id a refused call used: %v", err)
	}

	noDeadline := r.deadlineTask(t, "none", false)
	if _, err := ext("user:own", &stewardv1.ExtendDeadlineRequest{TaskId: noDeadline, Reason: "r", Deadline: later}); !errs.Is(err, errs.FailedPrecondition) {
		t.Errorf("a task without a deadline: %v, want failed precondition", err)
	}
	ended := r.deadlineTask(t, "ended", true)
	if _, err := r.ctl.Apply(ctx, "user:own", ended, &stewardv1.TaskCancelled{Reason: "done"}); err != nil {
		t.Fatal(err)
	}
	if _, err := ext("user:own", &stewardv1.ExtendDeadlineRequest{TaskId: ended, Reason: "r", Deadline: later}); !errs.Is(err, errs.FailedPrecondition) {
		t.Errorf("an ended task: %v, want failed precondition", err)
	}
}

// TestResumeAfterTheDeadline: a task suspended at its deadline is not
// resumed while the deadline has passed, and is once it is extended.
func TestResumeAfterTheDeadline(t *testing.T) {
	r := idleHarness(t)
	ctx := context.Background()
	id := r.deadlineTask(t, "late", true)
	due := r.task(t, id).Contract.Deadline
	r.Append(id, &stewardv1.TaskStarted{})
	r.clock.Pass(due.AsTime())
	r.Append(id, &stewardv1.TaskSuspended{Reason: "deadline passed", Cause: stewardv1.SuspendCause_SUSPEND_CAUSE_DEADLINE})
	resume := &stewardv1.ResumeTaskRequest{TaskId: id, Reason: "go on", RequestId: "resume-1"}
	if _, err := r.ctl.ResumeTask(ctx, rpc.Identity{Principal: "user:own"}, resume); !errs.Is(err, errs.FailedPrecondition) {
		t.Fatalf("resume past the deadline: %v, want failed precondition", err)
	}
	later := timestamppb.New(r.clock.Now().Add(time.Hour))
	if _, err := r.ctl.ExtendDeadline(ctx, "user:own", &stewardv1.ExtendDeadlineRequest{TaskId: id, Reason: "one more hour", Deadline: later}); err != nil {
		t.Fatal(err)
	}
	if tk := r.task(t, id); tk.Status != stewardv1.TaskStatus_TASK_STATUS_SUSPENDED {
		t.Fatalf("the extension left the task %v; a resume is a decision of its own", tk.Status)
	}
	tk, err := r.ctl.ResumeTask(ctx, rpc.Identity{Principal: "user:own"}, resume)
	if err != nil {
		t.Fatal(err)
	}
	if tk.Status != stewardv1.TaskStatus_TASK_STATUS_RUNNING {
		t.Fatalf("resumed to %v", tk.Status)
	}
}

// counts is how many events of each type the task has.
func (r *harness) counts(t *testing.T, taskID string) map[string]int {
	t.Helper()
	recs, err := r.Log.Read(context.Background(), taskID)
	if err != nil {
		t.Fatal(err)
	}
	n := map[string]int{}
	for _, rec := range recs {
		n[rec.Event.Type]++
	}
	return n
}
