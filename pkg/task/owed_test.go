package task_test

import (
	"testing"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/task"
)

// TestControlOwesARetryUntilItIsProposed: a transient failure under
// RECOVERY_MODE_RETRY is owed a retry until one names it (retry_of), its
// attempts are spent, or the failure is not worth retrying; a compensating
// task is owed its compensations whatever its ledger.
func TestControlOwesARetryUntilItIsProposed(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*stewardv1.Task)
		owed bool
	}{
		{"a transient failure", func(*stewardv1.Task) {}, true},
		{"not under RETRY", func(tk *stewardv1.Task) { tk.Contract.RecoveryPolicy = nil }, false},
		{"its retry proposed", func(tk *stewardv1.Task) {
			tk.Actions = append(tk.Actions, &stewardv1.Action{ActionId: "a2", RetryOf: "a1", Status: stewardv1.ActionStatus_ACTION_STATUS_PROPOSED})
		}, false},
		{"its attempts spent", func(tk *stewardv1.Task) { tk.Actions[0].RecoveryAttempt = task.DefaultRecoveryAttempts }, false},
		{"a deterministic failure", func(tk *stewardv1.Task) {
			tk.Actions[0].Outcome.FailureClass = stewardv1.FailureClass_FAILURE_CLASS_DETERMINISTIC
		}, false},
		{"compensating", func(tk *stewardv1.Task) {
			tk.Contract.RecoveryPolicy, tk.Status = nil, stewardv1.TaskStatus_TASK_STATUS_COMPENSATING
		}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tk, err := fold(t, dispatchedAction("a1"), one(&stewardv1.ActionOutcomeRecorded{ActionId: "a1", Outcome: &stewardv1.Outcome{
				Status: stewardv1.ActionStatus_ACTION_STATUS_FAILED, FailureClass: stewardv1.FailureClass_FAILURE_CLASS_TRANSIENT, Reason: "503"}}))
			if err != nil {
				t.Fatal(err)
			}
			tk.Contract.RecoveryPolicy = &stewardv1.RecoveryPolicy{Mode: stewardv1.RecoveryMode_RECOVERY_MODE_RETRY}
			tc.edit(tk)
			if got := task.ControlOwes(tk); got != tc.owed {
				t.Fatalf("ControlOwes = %v, want %v", got, tc.owed)
			}
		})
	}
}

// TestControlOwesAnAmendmentUntilItIsProposed: an action amended into one
// the task does not have yet is owed (the control plane's re-drive
// proposes it, and the watchdog takes the task for no agent's turn); once
// the amended action is on the task, nothing is.
func TestControlOwesAnAmendmentUntilItIsProposed(t *testing.T) {
	orig := &stewardv1.Action{ActionId: "a1", Status: stewardv1.ActionStatus_ACTION_STATUS_REJECTED, AmendedAs: "a2"}
	tk := &stewardv1.Task{Status: stewardv1.TaskStatus_TASK_STATUS_RUNNING, Actions: []*stewardv1.Action{orig}}
	if !task.AmendmentOwed(tk, orig) || !task.ControlOwes(tk) {
		t.Fatal("an amendment not yet proposed is not owed")
	}
	tk.Actions = append(tk.Actions, &stewardv1.Action{ActionId: "a2", AmendmentOf: "a1", Status: stewardv1.ActionStatus_ACTION_STATUS_AWAITING_APPROVAL})
	if task.AmendmentOwed(tk, orig) || task.ControlOwes(tk) {
		t.Fatal("a proposed amendment is still owed")
	}
}
