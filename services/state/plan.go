package state

import (
	"fmt"
	"strings"
	"time"

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

// planSummary tells a plan event for the timeline: a version submitted,
// with what it revised, or governance's judgement of one; "" for other
// events.
func planSummary(ev *stewardv1.Event) string {
	who := actorName(ev.Actor)
	switch p := ev.Payload.(type) {
	case *stewardv1.Event_PlanSubmitted:
		s := p.PlanSubmitted
		say := fmt.Sprintf("%s submitted plan version %d (%d steps, hash %.12s…)", who, s.Plan.GetVersion(), len(s.Plan.GetSteps()), s.PlanHash)
		if r := s.Revision; r != nil {
			say += fmt.Sprintf(", revising version %d: %d kept, %d changed, %d added, %d withdrawn",
				r.ReplacesVersion, len(r.Kept), len(r.Changed), len(r.Added), len(r.Withdrawn))
		}
		return say
	case *stewardv1.Event_PlanEvaluated:
		e := p.PlanEvaluated
		say := fmt.Sprintf("Policy %s said %s for plan version %d", shortRev(e.Snapshot.GetBundleRevision()), decisionName(e.Snapshot.GetDecision()), e.Version)
		if e.ApprovalId != "" {
			say += " after its approval " + e.ApprovalId
		}
		return withReason(say, strings.Join(e.Snapshot.GetReasons(), "; "))
	case *stewardv1.Event_PlanStepStarted:
		s := p.PlanStepStarted
		return fmt.Sprintf("Plan step %s started (attempt %d)%s", s.StepId, s.Attempt, startedWhat(s))
	case *stewardv1.Event_PlanStepEnded:
		e := p.PlanStepEnded
		return withReason(fmt.Sprintf("Plan step %s %s", e.StepId, task.StepStatusName(e.Status)), e.Reason)
	}
	return ""
}

// startedWhat says what a step's start began: its action, its items'
// actions or sub-tasks, its sub-task, its wait's end; nothing for a
// checkpoint, whose question follows.
func startedWhat(s *stewardv1.PlanStepStarted) string {
	switch {
	case s.ActionId != "":
		return ": action " + s.ActionId
	case s.SubTaskId != "":
		return ": sub-task " + s.SubTaskId
	case len(s.ItemActionIds) > 0:
		return fmt.Sprintf(": %d items, actions %s", len(s.ItemActionIds), strings.Join(s.ItemActionIds, ", "))
	case len(s.ItemSubTaskIds) > 0:
		return fmt.Sprintf(": %d items, sub-tasks %s", len(s.ItemSubTaskIds), strings.Join(s.ItemSubTaskIds, ", "))
	case s.WaitUntil != nil:
		return ": waits until " + s.WaitUntil.AsTime().UTC().Format(time.RFC3339)
	}
	return ""
}
