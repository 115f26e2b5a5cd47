package control_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/task"
)

const (
	running       = stewardv1.TaskStatus_TASK_STATUS_RUNNING
	waitingInput  = stewardv1.TaskStatus_TASK_STATUS_WAITING_FOR_INPUT
	deterministic = stewardv1.FailureClass_FAILURE_CLASS_DETERMINISTIC
)

// tries runs actions on the net tool one after another, each ending as
// given, and returns once the control plane has reacted to all of them.
type tries struct {
	r      *harness
	taskID string
	n      int
	at     time.Time
}

func (tr *tries) next(t *testing.T, target string, o *stewardv1.Outcome) *stewardv1.Action {
	t.Helper()
	tr.n++
	a := tr.r.propose(t, tr.taskID, fmt.Sprint("try-", tr.n), "net", target, nil)
	tr.r.run(t, tr.taskID, a.ActionId, o, nil, tr.at.Add(time.Duration(tr.n)*time.Second))
	return a
}

func (tr *tries) status(t *testing.T) *stewardv1.Task {
	t.Helper()
	tr.r.settle()
	return tr.r.task(t, tr.taskID)
}

// TestLoopGuardStopsTheSameFailure: the third identical failure on one
// tool and target stops the task for input. A failure elsewhere and a
// withdrawn action in between do not break the run.
func TestLoopGuardStopsTheSameFailure(t *testing.T) {
	r := newHarness(t)
	id := r.runningTask(t, "loop", stewardv1.RecoveryMode_RECOVERY_MODE_UNSPECIFIED, nil)
	tr := &tries{r: r, taskID: id, at: time.Now()}
	boom := func() *stewardv1.Outcome { return failed(deterministic, "HTTP 500: boom") }
	tr.next(t, "api", boom())
	tr.next(t, "other", boom())
	tr.next(t, "api", boom())
	if tk := tr.status(t); tk.Status != running {
		t.Fatalf("after two failures: %s (%s), want running", tk.Status, tk.StatusReason)
	}
	// Propose one and edit it: the original is withdrawn, the edit fails.
	first := r.propose(t, id, "edited", "net", "api", nil)
	edit, _, err := r.ctl.ProposeAction(context.Background(), "agent", &stewardv1.ProposeActionRequest{TaskId: id, ProposalId: "edit", Tool: "net", Target: "api", EditOf: first.ActionId})
	if err != nil {
		t.Fatal(err)
	}
	r.run(t, id, edit.ActionId, boom(), nil, tr.at.Add(time.Minute))
	tk := tr.status(t)
	want := "needs help: the same failure 3 times in a row on net api: HTTP 500: boom"
	if tk.Status != waitingInput || tk.StatusReason != want {
		t.Fatalf("after three failures: %s (%s), want waiting for input (%s)", tk.Status, tk.StatusReason, want)
	}
	if ni := r.needsInput(t, id).GetTaskNeedsInput(); ni.GetCause() != stewardv1.NeedsInputCause_NEEDS_INPUT_CAUSE_SAME_FAILURES || ni.GetActionId() != edit.ActionId {
		t.Fatalf("stopped with %v; want cause same failures, naming %s", ni, edit.ActionId)
	}
	if task.FindAction(tk, first.ActionId).Status != stewardv1.ActionStatus_ACTION_STATUS_WITHDRAWN {
		t.Fatal("the edited action was not withdrawn")
	}
	// Redelivery stops it no second time.
	before := r.count(t, id)
	r.redeliver(t)
	if after := r.count(t, id); after != before {
		t.Fatalf("redelivery appended %d events", after-before)
	}
}

// TestLoopGuardRunsEndOnADifference: a success in between resets the run,
// and a different reason is a different failure.
func TestLoopGuardRunsEndOnADifference(t *testing.T) {
	r := newHarness(t)
	id := r.runningTask(t, "no-loop", stewardv1.RecoveryMode_RECOVERY_MODE_UNSPECIFIED, nil)
	tr := &tries{r: r, taskID: id, at: time.Now()}
	tr.next(t, "api", failed(deterministic, "boom"))
	tr.next(t, "api", failed(deterministic, "boom"))
	tr.next(t, "api", succeeded())
	tr.next(t, "api", failed(deterministic, "boom"))
	tr.next(t, "api", failed(deterministic, "boom"))
	tr.next(t, "api", failed(deterministic, "bang"))
	tr.next(t, "api", failed(stewardv1.FailureClass_FAILURE_CLASS_VALIDATION, "bang"))
	if tk := tr.status(t); tk.Status != running {
		t.Fatalf("%s (%s), want running", tk.Status, tk.StatusReason)
	}
}

// TestLoopGuardFollowsTheContract: contract.limits.max_same_failures sets
// the run's length.
func TestLoopGuardFollowsTheContract(t *testing.T) {
	r := newHarness(t)
	id := r.runningTask(t, "limit", stewardv1.RecoveryMode_RECOVERY_MODE_UNSPECIFIED, &stewardv1.TaskLimits{MaxSameFailures: 2})
	tr := &tries{r: r, taskID: id, at: time.Now()}
	tr.next(t, "", failed(deterministic, "boom"))
	tr.next(t, "", failed(deterministic, "boom"))
	if tk := tr.status(t); tk.Status != waitingInput || tk.StatusReason != "needs help: the same failure 2 times in a row on net: boom" {
		t.Fatalf("%s (%s), want waiting for input", tk.Status, tk.StatusReason)
	}
}
