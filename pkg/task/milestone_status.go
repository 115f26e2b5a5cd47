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

// deriveMilestones sets t's milestones and current milestone, after ev,
// from what is tagged with each, keeping the agent's reports and the
// grants of resumes from t's previous states. The fold calls it after
// every event; it builds new states, never changing ones a view handed
// out may share. The plan's steps are tallied afresh each time; actions
// and decisions, which only ever add up, are counted once in full (when
// the task is created, a fork's carried ones among them) and then by the
// one ev adds, so that a replay does not pay for the whole ledger at
// every event.
func deriveMilestones(t *stewardv1.Task, ev *stewardv1.Event) {
	declared := t.Contract.GetMilestones()
	if len(declared) == 0 {
		t.Milestones, t.CurrentMilestone = nil, ""
		return
	}
	var tallies tallies
	if ev.GetTaskCreated() != nil || !sameMilestones(t.Milestones, declared) {
		tallies = tallyMilestones(t) // the first derivation, or of another list
	} else {
		tallies = tallyEvent(t, ev)
	}
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

// sameMilestones reports whether states are of declared, in order.
func sameMilestones(states []*stewardv1.MilestoneState, declared []*stewardv1.Milestone) bool {
	if len(states) != len(declared) {
		return false
	}
	for i, m := range declared {
		if states[i].MilestoneId != m.MilestoneId {
			return false
		}
	}
	return true
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

// tallies is what is tagged with each milestone, by id.
type tallies map[string]*tally

func (ts tallies) of(id string) *tally {
	n := ts[id]
	if n == nil {
		n = &tally{}
		ts[id] = n
	}
	return n
}

// action counts a, an action tagged or not, as the task's cap counts
// actions: compensations and a fork's carried ones do not count, though
// carried ones did start their milestone.
func (ts tallies) action(a *stewardv1.Action) {
	if a.GetMilestoneId() == "" {
		return
	}
	n := ts.of(a.MilestoneId)
	n.started = true
	if a.Compensates == "" && !a.Carried {
		n.used++
	}
}

// decision counts d as the task's cap counts decisions: observed ones
// (their call was an action) and carried ones do not count.
func (ts tallies) decision(d *stewardv1.Decision) {
	if d.GetMilestoneId() == "" {
		return
	}
	n := ts.of(d.MilestoneId)
	n.started = true
	if !d.Carried && d.GetCall().GetProvenance() != stewardv1.Provenance_PROVENANCE_OBSERVED {
		n.used++
	}
}

// tallyMilestones gathers, in full, what is tagged with each milestone of
// t: its actions, its decisions and the steps of the plan in force.
func tallyMilestones(t *stewardv1.Task) tallies {
	ts := tallies{}
	for _, a := range t.Actions {
		ts.action(a)
	}
	for _, d := range t.Decisions {
		ts.decision(d)
	}
	tallySteps(t.GetPlan(), ts.of)
	return ts
}

// tallyEvent is tallyMilestones from t's previous states: their counts,
// and started for any not pending (once started, a milestone stays so),
// plus what ev adds; the plan's steps afresh.
func tallyEvent(t *stewardv1.Task, ev *stewardv1.Event) tallies {
	ts := tallies{}
	for _, m := range t.Milestones {
		n := ts.of(m.MilestoneId)
		n.used, n.started = m.ActionsUsed, m.Status != stewardv1.MilestoneStatus_MILESTONE_STATUS_PENDING
	}
	switch p := ev.Payload.(type) {
	case *stewardv1.Event_ActionProposed:
		ts.action(p.ActionProposed.GetAction())
	case *stewardv1.Event_DecisionRecorded:
		ts.decision(p.DecisionRecorded.GetDecision())
	}
	tallySteps(t.GetPlan(), ts.of)
	return ts
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
