package task_test

import (
	"errors"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/steward-run/steward/pkg/errs"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/task"
)

// TestDeadlineExtension checks the fold's deadline step: the accountable
// owner moves the deadline later, and the task's contract reads the new
// one; anyone else, an earlier or past deadline, a stale previous one, a
// task without a deadline or an ended task is refused and changes
// nothing.
func TestDeadlineExtension(t *testing.T) {
	now := time.Now()
	due := timestamppb.New(now.Add(time.Hour))
	later := timestamppb.New(now.Add(2 * time.Hour))
	withDeadline := func(d *timestamppb.Timestamp) *stewardv1.TaskContract {
		return &stewardv1.TaskContract{Intent: "i", RequesterRef: "user:req", AccountableOwnerRef: "user:own", Deadline: d}
	}
	extend := func(prev, to *timestamppb.Timestamp) *stewardv1.DeadlineExtended {
		return &stewardv1.DeadlineExtended{Previous: prev, Deadline: to, Reason: "the data came late"}
	}

	tk, err := foldAs(t, withDeadline(due), as{"user:own", extend(due, later)})
	if err != nil {
		t.Fatal(err)
	}
	if got := tk.Contract.Deadline.AsTime(); !got.Equal(later.AsTime()) {
		t.Fatalf("deadline %v after the extension, want %v", got, later.AsTime())
	}
	if tk.Status != stewardv1.TaskStatus_TASK_STATUS_RUNNING {
		t.Errorf("status %v: an extension changes no status", tk.Status)
	}
	if !task.PastDeadline(tk, later.AsTime()) || task.PastDeadline(tk, due.AsTime()) {
		t.Error("PastDeadline does not read the extended deadline")
	}

	refusals := []struct {
		name  string
		k     *stewardv1.TaskContract
		steps []as
		code  errs.Code
		field string
	}{
		{"someone else", withDeadline(due), []as{{"user:req", extend(due, later)}}, errs.PermissionDenied, ""},
		{"no deadline", withDeadline(nil), []as{{"user:own", extend(nil, later)}}, errs.FailedPrecondition, ""},
		{"not later", withDeadline(due), []as{{"user:own", extend(due, due)}}, errs.Invalid, "deadline"},
		{"in the past", withDeadline(timestamppb.New(now.Add(-2 * time.Hour))),
			[]as{{"user:own", extend(timestamppb.New(now.Add(-2*time.Hour)), timestamppb.New(now.Add(-time.Hour)))}}, errs.Invalid, "deadline"},
		{"unset", withDeadline(due), []as{{"user:own", extend(due, nil)}}, errs.Invalid, "deadline"},
		{"stale previous", withDeadline(due), []as{{"user:own", extend(due, later)}, {"user:own", extend(due, timestamppb.New(now.Add(3*time.Hour)))}}, errs.FailedPrecondition, ""},
		{"ended", withDeadline(due), []as{{"user:own", cancelled()}, {"user:own", extend(due, later)}}, errs.FailedPrecondition, ""},
	}
	for _, r := range refusals {
		t.Run(r.name, func(t *testing.T) {
			before, err := foldAs(t, r.k, r.steps...)
			if !errs.Is(err, r.code) {
				t.Fatalf("err = %v, want %v", err, r.code)
			}
			var e *errs.Error
			if !errors.As(err, &e) || e.Field != r.field {
				t.Errorf("err %v names field %q, want %q", err, fieldOf(e), r.field)
			}
			if d := before.Contract.GetDeadline(); r.k.Deadline != nil && d.AsTime().After(later.AsTime()) {
				t.Errorf("a refused extension changed the deadline to %v", d.AsTime())
			}
		})
	}
}

func fieldOf(e *errs.Error) string {
	if e == nil {
		return ""
	}
	return e.Field
}
