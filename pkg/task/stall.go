package task

import (
	"time"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// DefaultStallAfter is how long a working task may go without an event
// before the state plane's watchdog marks it stalled, when its contract's
// timers.stall_after does not say (docs/stalls.md).
const DefaultStallAfter = 15 * time.Minute

// StallAfter is c's stall threshold; a missing or non-positive one means
// the default.
func StallAfter(c *stewardv1.TaskContract) time.Duration {
	if d := c.GetTimers().GetStallAfter().AsDuration(); d > 0 {
		return d
	}
	return DefaultStallAfter
}

// PlanWaitsDeclared reports whether t's plan waits at now on something
// with a clock of its own, as an approval or a retry timer does: its
// approval asked of a person (reminded, escalated and suspended by
// governance), a wait step not yet due (its timer), or a step whose
// sub-tasks are at work (each watched for itself). Quiet so, a task is
// not stalled, and a mark it carries does not suspend it.
func PlanWaitsDeclared(t *stewardv1.Task, now time.Time) bool {
	p := t.Plan
	if p.GetGovernance() == stewardv1.PlanGovernance_PLAN_GOVERNANCE_AWAITING_APPROVAL {
		ap := p.GetApproval()
		return ap != nil && !ap.Withdrawn && ap.Decision == stewardv1.ApprovalDecision_APPROVAL_DECISION_UNSPECIFIED
	}
	if !PlanRuns(p) {
		return false
	}
	for _, s := range p.GetSteps() {
		if s.Status != stewardv1.StepStatus_STEP_STATUS_RUNNING {
			continue
		}
		if s.WaitUntil != nil && s.WaitUntil.AsTime().After(now) || s.SubTaskId != "" || len(s.ItemSubTaskIds) > 0 {
			return true
		}
	}
	return false
}
