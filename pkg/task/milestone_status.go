package task

import (
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// tally is what is tagged with one milestone, gathered in one pass over
// the task.
type tally struct {
	used       uint32 // actions and decisions counted against its cap
	started    bool   // anything tagged with it started
	steps      uint32 // plan steps tagged with it, withdrawn ones not
	stepsDone  uint32 // of those, ended well
	stepFailed bool
}

// DeriveMilestones sets t's milestones and current milestone from what is
// tagged with each, keeping the agent's reports and the grants of
// resumes from t's previous states. The fold calls it after every event;
// it builds new states, never changing ones a view handed out may share.
func DeriveMilestones(t *stewardv1.Task) {
	declared := t.Contract.GetMilestones()
	if len(declared) == 0 {
		t.Milestones, t.CurrentMilestone = nil, ""
		return
	}
	tallies := tallyMilestones(t)
	out := make([]*stewardv1.MilestoneState, 0, len(declared))
	current := ""
	for _, m := range declared {
		s := deriveMilestone(t, m, tallies[m.MilestoneId])
		if current == "" && s.Status != stewardv1.MilestoneStatus_MILESTONE_STATUS_DONE {
			current = m.MilestoneId
		}
		out = append(out, s)
	}
	t.Milestones, t.CurrentMilestone = out, current
}

// deriveMilestone is m's state in t, given what is tagged with it.
func deriveMilestone(t *stewardv1.Task, m *stewardv1.Milestone, n *tally) *stewardv1.MilestoneState {
	if n == nil {
		n = &tally{}
	}
	s := &stewardv1.MilestoneState{MilestoneId: m.MilestoneId, Title: m.Title, ActionsUsed: n.used, Steps: n.steps, StepsDone: n.stepsDone}
	if prev := MilestoneOf(t, m.MilestoneId); prev != nil {
		s.Percent, s.Note, s.ProgressedAt, s.ActionsGranted = prev.Percent, prev.Note, prev.ProgressedAt, prev.ActionsGranted
	}
	if m.MaxActions > 0 {
		s.MaxActions = m.MaxActions + s.ActionsGranted
	}
	for _, u := range t.BudgetUsed.GetMilestones() {
		if u.MilestoneId == m.MilestoneId {
			s.Tokens, s.CostMicros = u.Tokens, u.CostMicros
		}
	}
	for _, b := range t.Contract.GetBudget().GetMilestones() {
		if b.MilestoneId == m.MilestoneId {
			s.MaxTokens, s.MaxCostMicros = b.MaxTokens, b.MaxCostMicros
		}
	}
	s.Status = milestoneStatus(s, n)
	return s
}

// milestoneStatus says where a milestone stands: a failed step fails it;
// every step ended well (or, with no steps, the agent's 100 %) makes it
// done, whatever its cap; else at its cap, started, or not.
func milestoneStatus(s *stewardv1.MilestoneState, n *tally) stewardv1.MilestoneStatus {
	switch {
	case n.stepFailed:
		return stewardv1.MilestoneStatus_MILESTONE_STATUS_FAILED
	case n.steps > 0 && n.stepsDone == n.steps, n.steps == 0 && s.Percent >= MaxProgressPercent:
		return stewardv1.MilestoneStatus_MILESTONE_STATUS_DONE
	case s.MaxActions > 0 && s.ActionsUsed >= s.MaxActions:
		return stewardv1.MilestoneStatus_MILESTONE_STATUS_AT_CAP
	case n.started || s.ProgressedAt != nil:
		return stewardv1.MilestoneStatus_MILESTONE_STATUS_ACTIVE
	}
	return stewardv1.MilestoneStatus_MILESTONE_STATUS_PENDING
}

// tallyMilestones gathers what is tagged with each milestone of t: its
// actions and decisions (counted against its cap as the task's are
// against its own: compensations, observed decisions and a fork's carried
// ones not; though carried ones did start it), and the steps of the plan
// in force.
func tallyMilestones(t *stewardv1.Task) map[string]*tally {
	out := map[string]*tally{}
	of := func(id string) *tally {
		n := out[id]
		if n == nil {
			n = &tally{}
			out[id] = n
		}
		return n
	}
	for _, a := range t.Actions {
		if a.MilestoneId == "" {
			continue
		}
		n := of(a.MilestoneId)
		n.started = true
		if a.Compensates == "" && !a.Carried {
			n.used++
		}
	}
	for _, d := range t.Decisions {
		if d.MilestoneId == "" {
			continue
		}
		n := of(d.MilestoneId)
		n.started = true
		if !d.Carried && d.GetCall().GetProvenance() != stewardv1.Provenance_PROVENANCE_OBSERVED {
			n.used++
		}
	}
	tallySteps(t.GetPlan(), of)
	return out
}

// tallySteps counts the steps of plan that name a milestone, by how they
// stand.
func tallySteps(plan *stewardv1.PlanState, of func(string) *tally) {
	milestones := map[string]string{}
	for _, s := range plan.GetPlan().GetSteps() {
		if s.MilestoneId != "" {
			milestones[s.Id] = s.MilestoneId
		}
	}
	for _, st := range plan.GetSteps() {
		id, ok := milestones[st.StepId]
		if !ok || st.Status == stewardv1.StepStatus_STEP_STATUS_WITHDRAWN {
			continue
		}
		n := of(id)
		n.steps++
		switch st.Status {
		case stewardv1.StepStatus_STEP_STATUS_SUCCEEDED, stewardv1.StepStatus_STEP_STATUS_SKIPPED:
			n.stepsDone++
			n.started = true
		case stewardv1.StepStatus_STEP_STATUS_FAILED:
			n.stepFailed, n.started = true, true
		case stewardv1.StepStatus_STEP_STATUS_RUNNING:
			n.started = true
		}
	}
}
