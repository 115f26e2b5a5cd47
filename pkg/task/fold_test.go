package task_test

import (
	"strings"
	"testing"

	"github.com/steward-run/steward/pkg/errs"
	"github.com/steward-run/steward/pkg/event"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/stewardtest"
	"github.com/steward-run/steward/pkg/task"
)

var (
	created = func() event.Payload {
		return &stewardv1.TaskCreated{Contract: &stewardv1.TaskContract{Intent: "i"}, RequestId: "r1"}
	}
	started   = func() event.Payload { return &stewardv1.TaskStarted{} }
	paused    = func() event.Payload { return &stewardv1.TaskPaused{Reason: "wait"} }
	resumed   = func() event.Payload { return &stewardv1.TaskResumed{} }
	cancelled = func() event.Payload { return &stewardv1.TaskCancelled{Reason: "no longer needed"} }
)

func TestFoldFollowsTheStateMachine(t *testing.T) {
	tests := []struct {
		name    string
		events  []event.Payload
		want    stewardv1.TaskStatus
		illegal bool
	}{
		{"created is pending", []event.Payload{created()}, stewardv1.TaskStatus_TASK_STATUS_PENDING, false},
		{"started is running", []event.Payload{created(), started()}, stewardv1.TaskStatus_TASK_STATUS_RUNNING, false},
		{"pause and resume return to running", []event.Payload{created(), started(), paused(), resumed()}, stewardv1.TaskStatus_TASK_STATUS_RUNNING, false},
		{"pause while pending resumes to pending", []event.Payload{created(), paused(), resumed()}, stewardv1.TaskStatus_TASK_STATUS_PENDING, false},
		{"cancel a paused task", []event.Payload{created(), started(), paused(), cancelled()}, stewardv1.TaskStatus_TASK_STATUS_CANCELLED, false},
		{"resume a cancelled task", []event.Payload{created(), cancelled(), resumed()}, 0, true},
		{"cancel twice", []event.Payload{created(), cancelled(), cancelled()}, 0, true},
		{"start twice", []event.Payload{created(), started(), started()}, 0, true},
		{"resume a running task", []event.Payload{created(), started(), resumed()}, 0, true},
		{"a pause taken over resumes to what came before the first", []event.Payload{created(), started(), paused(), paused(), resumed()}, stewardv1.TaskStatus_TASK_STATUS_RUNNING, false},
		{"no creation", []event.Payload{started()}, 0, true},
		{"created twice", []event.Payload{created(), created()}, 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := task.Fold(stewardtest.History(t, "t1", tt.events...))
			if tt.illegal {
				if !errs.Is(err, errs.FailedPrecondition) {
					t.Fatalf("err = %v, want a failed precondition", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.Status != tt.want {
				t.Fatalf("status = %v, want %v", got.Status, tt.want)
			}
			if got.EventCount != uint32(len(tt.events)) || got.LastSequence != uint64(len(tt.events)) {
				t.Fatalf("count/seq = %d/%d", got.EventCount, got.LastSequence)
			}
		})
	}
}

func TestApplyLeavesTaskUnchangedOnError(t *testing.T) {
	recs := stewardtest.History(t, "t1", created(), cancelled(), resumed())
	tk, err := task.Fold(recs[:2])
	if err != nil {
		t.Fatal(err)
	}
	before := tk.String()
	if err := task.Apply(tk, recs[2].Event, recs[2].Sequence); err == nil {
		t.Fatal("resume of a cancelled task was accepted")
	}
	if tk.String() != before {
		t.Fatal("a refused event changed the task")
	}
}

func TestFoldRefusesABrokenLink(t *testing.T) {
	recs := stewardtest.History(t, "t1", created(), started(), paused())
	recs = append(recs[:1], recs[2:]...) // drop "started"
	if _, err := task.Fold(recs); !errs.Is(err, errs.FailedPrecondition) {
		t.Fatalf("err = %v, want a failed precondition for the broken link", err)
	}
}

func TestFoldKeepsTheContract(t *testing.T) {
	tk, err := task.Fold(stewardtest.History(t, "t1", created()))
	if err != nil {
		t.Fatal(err)
	}
	if tk.Contract.TaskId != "t1" || tk.Contract.Intent != "i" || tk.RequestId != "r1" {
		t.Fatalf("task = %v", tk)
	}
}

// TestAnEventFromAPlaneThatDoesNotOwnItIsRefused: a permit recorded by
// the execution plane, or a claim by governance, is not folded.
func TestAnEventFromAPlaneThatDoesNotOwnItIsRefused(t *testing.T) {
	tk := &stewardv1.Task{}
	created, err := event.New(event.Meta{TaskID: "t1", Actor: &stewardv1.Actor{Principal: "user:a", Plane: event.PlaneControl}}, &stewardv1.TaskCreated{Contract: &stewardv1.TaskContract{TaskId: "t1"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := task.Apply(tk, created, 1); err != nil {
		t.Fatal(err)
	}
	// An event that names no plane, or no actor at all, is no one's.
	for _, plane := range []string{event.PlaneExecution, event.PlaneGovernance, "mallory", ""} {
		ev, err := event.New(event.Meta{TaskID: "t1", Actor: &stewardv1.Actor{Principal: "x", Plane: plane}}, &stewardv1.TaskStarted{})
		if err != nil {
			t.Fatal(err)
		}
		if err := task.Check(tk, ev); !errs.Is(err, errs.FailedPrecondition) || !strings.Contains(err.Error(), "control plane's to record") {
			t.Errorf("task.started from %q: %v, want refused as the control plane's", plane, err)
		}
	}
	anonymous, err := event.New(event.Meta{TaskID: "t1"}, &stewardv1.TaskStarted{})
	if err != nil {
		t.Fatal(err)
	}
	if err := task.Check(tk, anonymous); !errs.Is(err, errs.FailedPrecondition) {
		t.Errorf("task.started with no actor: %v, want refused", err)
	}
}
