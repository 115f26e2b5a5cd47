package canary

import (
	"cmp"
	"fmt"
	"strings"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// Observe is what a task did, as a Run: its actions, decisions, cost,
// and, when it was not accepted, why.
func Observe(t *stewardv1.Task) Run {
	run := Run{
		TaskID:     t.GetContract().GetTaskId(),
		Status:     word(t.Status.String(), "TASK_STATUS_"),
		Accepted:   t.Status == stewardv1.TaskStatus_TASK_STATUS_ACCEPTED,
		CostMicros: t.GetBudgetUsed().GetCostMicros(),
		Tokens:     t.GetBudgetUsed().GetTokens(),
		Actions:    []ActionRecord{},
		Decisions:  []DecisionEntry{},
	}
	for _, a := range t.Actions {
		run.Actions = append(run.Actions, ActionRecord{Tool: a.Tool, Version: a.ToolVersion,
			Decision: policyWord(a.GetSnapshot().GetDecision()), Status: word(a.Status.String(), "ACTION_STATUS_")})
	}
	for _, d := range t.Decisions {
		run.Decisions = append(run.Decisions, DecisionEntry{Model: d.GetCall().GetModelId()})
	}
	if !run.Accepted {
		run.Reason = notAccepted(t)
		// A task stopped for its own reason (suspended past its budget,
		// failed, cancelled) says so too: an action's denial may be its
		// consequence.
		if stopped(t.Status) && !strings.HasPrefix(run.Reason, "task ") {
			run.Reason += " (" + taskReason(t) + ")"
		}
	}
	return run
}

// policyWord is a policy decision in the words of a canary's report.
func policyWord(d stewardv1.PolicyDecision) string {
	switch d {
	case stewardv1.PolicyDecision_POLICY_DECISION_ALLOW:
		return "allow"
	case stewardv1.PolicyDecision_POLICY_DECISION_DENY:
		return "deny"
	case stewardv1.PolicyDecision_POLICY_DECISION_REQUIRE_APPROVAL:
		return "approval"
	}
	return "none"
}

func word(enum, prefix string) string { return strings.ToLower(strings.TrimPrefix(enum, prefix)) }

// notAccepted says why task t is not accepted: the first action that did
// not succeed, else the acceptance checks that failed, else its status.
func notAccepted(t *stewardv1.Task) string {
	for i, a := range t.Actions {
		switch a.Status {
		case stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED:
			continue
		case stewardv1.ActionStatus_ACTION_STATUS_DENIED:
			// The denial's reasons: policy's, or governance's own (a
			// budget spent, a credential revoked) where no policy spoke.
			why := cmp.Or(a.GetOutcome().GetReason(), strings.Join(a.GetSnapshot().GetReasons(), "; "))
			return fmt.Sprintf("action %d %s denied: %s", i+1, a.Tool, why)
		case stewardv1.ActionStatus_ACTION_STATUS_FAILED:
			return fmt.Sprintf("action %d %s failed (%s): %s", i+1, a.Tool, word(a.GetOutcome().GetFailureClass().String(), "FAILURE_CLASS_"), a.GetOutcome().GetReason())
		default:
			return fmt.Sprintf("action %d %s %s", i+1, a.Tool, word(a.Status.String(), "ACTION_STATUS_"))
		}
	}
	if n := len(t.Acceptance); n > 0 {
		var failed []string
		for _, c := range t.Acceptance[n-1].Checks {
			if !c.Passed {
				failed = append(failed, fmt.Sprintf("criterion %s failed: %s", c.CriterionId, c.Detail))
			}
		}
		if len(failed) > 0 {
			return strings.Join(failed, "; ")
		}
	}
	return taskReason(t)
}

func taskReason(t *stewardv1.Task) string {
	reason := "task " + word(t.Status.String(), "TASK_STATUS_")
	if t.StatusReason != "" {
		reason += ": " + t.StatusReason
	}
	return reason
}

func stopped(s stewardv1.TaskStatus) bool {
	switch s {
	case stewardv1.TaskStatus_TASK_STATUS_SUSPENDED, stewardv1.TaskStatus_TASK_STATUS_FAILED, stewardv1.TaskStatus_TASK_STATUS_CANCELLED:
		return true
	}
	return false
}
