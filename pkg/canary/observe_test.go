package canary

import (
	"testing"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// TestObserve: what a run records of a task, and why it says a task was
// not accepted.
func TestObserve(t *testing.T) {
	succeeded := &stewardv1.Action{Tool: "lookup", ToolVersion: "1.0.0", Status: stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED,
		Snapshot: &stewardv1.PolicySnapshot{Decision: stewardv1.PolicyDecision_POLICY_DECISION_ALLOW}}
	for _, tc := range []struct {
		name, reason string
		task         *stewardv1.Task
	}{
		{"policy denied", "action 2 refund denied: refunds are frozen", &stewardv1.Task{Status: stewardv1.TaskStatus_TASK_STATUS_RUNNING,
			Actions: []*stewardv1.Action{succeeded, {Tool: "refund", Status: stewardv1.ActionStatus_ACTION_STATUS_DENIED,
				Snapshot: &stewardv1.PolicySnapshot{Decision: stewardv1.PolicyDecision_POLICY_DECISION_DENY, Reasons: []string{"refunds are frozen"}}}}}},
		{"denied, task suspended", "action 1 refund denied: budget spent (task suspended: the budget is spent)", &stewardv1.Task{
			Status: stewardv1.TaskStatus_TASK_STATUS_SUSPENDED, StatusReason: "the budget is spent",
			Actions: []*stewardv1.Action{{Tool: "refund", Status: stewardv1.ActionStatus_ACTION_STATUS_DENIED,
				Outcome: &stewardv1.Outcome{Reason: "budget spent"}}}}},
		{"failed", "action 1 charge failed (deterministic): card declined", &stewardv1.Task{Status: stewardv1.TaskStatus_TASK_STATUS_RUNNING,
			Actions: []*stewardv1.Action{{Tool: "charge", Status: stewardv1.ActionStatus_ACTION_STATUS_FAILED,
				Outcome: &stewardv1.Outcome{FailureClass: stewardv1.FailureClass_FAILURE_CLASS_DETERMINISTIC, Reason: "card declined"}}}}},
		{"checks failed", "criterion paid failed: false", &stewardv1.Task{Status: stewardv1.TaskStatus_TASK_STATUS_RUNNING,
			Actions:    []*stewardv1.Action{succeeded},
			Acceptance: []*stewardv1.AcceptanceRound{{Checks: []*stewardv1.CriterionResult{{CriterionId: "paid", Detail: "false"}}}}}},
		{"produced", "task produced", &stewardv1.Task{Status: stewardv1.TaskStatus_TASK_STATUS_PRODUCED}},
		{"accepted", "", &stewardv1.Task{Status: stewardv1.TaskStatus_TASK_STATUS_ACCEPTED, Actions: []*stewardv1.Action{succeeded},
			Decisions: []*stewardv1.Decision{{Call: &stewardv1.ModelCall{ModelId: "gpt-a"}}}, BudgetUsed: &stewardv1.BudgetUsage{CostMicros: 7}}},
	} {
		run := Observe(tc.task)
		if run.Reason != tc.reason || run.Accepted != (tc.reason == "") {
			t.Errorf("%s: %q, want %q", tc.name, run.Reason, tc.reason)
		}
	}
	run := Observe(&stewardv1.Task{Status: stewardv1.TaskStatus_TASK_STATUS_ACCEPTED, Actions: []*stewardv1.Action{succeeded},
		Decisions: []*stewardv1.Decision{{Call: &stewardv1.ModelCall{ModelId: "gpt-a"}}}, BudgetUsed: &stewardv1.BudgetUsage{CostMicros: 7}})
	want := ActionRecord{Tool: "lookup", Version: "1.0.0", Decision: "allow", Status: "succeeded"}
	if run.Status != "accepted" || run.Actions[0] != want || run.Decisions[0].Model != "gpt-a" || run.CostMicros != 7 {
		t.Errorf("%+v", run)
	}
}
