package state

import (
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/plan"
	"github.com/steward-run/steward/pkg/task"
)

// showReady fills in the steps of t's plan that may start now
// (PlanState.ready), which the fold leaves empty: it cannot evaluate a
// plan without pkg/plan, which the offline auditor does without. None
// while governance holds the plan (pending, denied, awaiting approval)
// or the task is not active. t must be the caller's own copy.
func showReady(t *stewardv1.Task) {
	p := t.GetPlan()
	if p == nil || !task.PlanRuns(p) || !task.Active(t.Status) {
		return
	}
	p.Ready = plan.Ready(p.Plan, task.StepStatuses(p))
}
