package task

import (
	"slices"
	"strings"

	"google.golang.org/protobuf/proto"

	"github.com/steward-run/steward/pkg/errs"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// Milestones (docs/milestones.md): the phases a contract lists, in order.
// What a milestone is — its status, its count against its cap, its spend —
// is derived from what is tagged with it (plan steps, actions, decisions)
// every time the fold moves, so that every reader of the task sees the
// same; only the agent's reports and the grants of resumes are kept
// between events.

// MaxProgressPercent is the most a milestone's progress report may say.
const MaxProgressPercent = 100

// FindMilestone returns the contract's milestone with id, or nil.
func FindMilestone(c *stewardv1.TaskContract, id string) *stewardv1.Milestone {
	for _, m := range c.GetMilestones() {
		if m.MilestoneId == id {
			return m
		}
	}
	return nil
}

// KnownMilestone reports whether id may tag a plan step, action or
// decision of a task under c: one of its declared milestones when it
// declares any, else one of its budget lines (as before milestones were
// declared).
func KnownMilestone(c *stewardv1.TaskContract, id string) bool {
	if len(c.GetMilestones()) > 0 {
		return FindMilestone(c, id) != nil
	}
	for _, m := range c.GetBudget().GetMilestones() {
		if m.MilestoneId == id {
			return true
		}
	}
	return false
}

// MilestoneIDs lists the ids a tag may name under c (KnownMilestone), for
// a refusal to show.
func MilestoneIDs(c *stewardv1.TaskContract) []string {
	var ids []string
	if len(c.GetMilestones()) > 0 {
		for _, m := range c.Milestones {
			ids = append(ids, m.MilestoneId)
		}
		return ids
	}
	for _, m := range c.GetBudget().GetMilestones() {
		ids = append(ids, m.MilestoneId)
	}
	return ids
}

// unknownMilestone is the fold's refusal of a tag naming no milestone of
// t's contract.
func unknownMilestone(t *stewardv1.Task, field, id string) error {
	return errs.Field(field, "task %s has no milestone %s (%v)", t.Contract.GetTaskId(), errs.Quote(id), MilestoneIDs(t.Contract))
}

// MilestoneOf returns t's state of milestone id, or nil.
func MilestoneOf(t *stewardv1.Task, id string) *stewardv1.MilestoneState {
	for _, m := range t.GetMilestones() {
		if m.MilestoneId == id {
			return m
		}
	}
	return nil
}

// MilestoneAtCap reports whether milestone id of t has used its cap: the
// next action or decision tagged with it stops the task for a person.
func MilestoneAtCap(t *stewardv1.Task, id string) bool {
	m := MilestoneOf(t, id)
	return m != nil && m.MaxActions > 0 && m.ActionsUsed >= m.MaxActions
}

// grantMilestone lets the milestone a task stopped at (its open
// question's) propose and decide its contract's max_actions more, when a
// person lets the task go on while it is at its cap; as grantActions does
// for the task's cap.
func grantMilestone(t *stewardv1.Task) {
	id := t.OpenInput.GetMilestoneId()
	if id == "" || !MilestoneAtCap(t, id) {
		return
	}
	out := make([]*stewardv1.MilestoneState, len(t.Milestones))
	for i, m := range t.Milestones {
		if m.MilestoneId == id {
			m = proto.CloneOf(m) // views handed out may share the old one
			m.ActionsGranted += FindMilestone(t.Contract, id).GetMaxActions()
		}
		out[i] = m
	}
	t.Milestones = out
}

// milestoneStep checks an agent's progress report against t and returns
// the change to make; ok is false for other events.
func milestoneStep(t *stewardv1.Task, ev *stewardv1.Event) (commit func(), ok bool, err error) {
	p := ev.GetMilestoneProgressed()
	if p == nil {
		return nil, false, nil
	}
	switch {
	case Terminal(t.Status):
		return nil, true, illegal(t, "report progress on")
	case FindMilestone(t.Contract, p.MilestoneId) == nil:
		return nil, true, unknownMilestone(t, "milestone_id", p.MilestoneId)
	case p.Percent > MaxProgressPercent:
		return nil, true, errs.Field("percent", "%d is past 100", p.Percent)
	}
	return func() {
		out := make([]*stewardv1.MilestoneState, len(t.Milestones))
		for i, m := range t.Milestones {
			if m.MilestoneId == p.MilestoneId {
				m = proto.CloneOf(m)
				m.Percent, m.Note, m.ProgressedAt = p.Percent, p.Note, ev.Time
			}
			out[i] = m
		}
		t.Milestones = out
	}, true, nil
}

// raiseMilestone checks a raise of one milestone's budget line and
// returns how to apply it: each new limit above the line's (a line with
// no limit in a dimension has nothing to raise there), and every line
// together still within the task's limits. Only the milestone's alerts
// start over.
func raiseMilestone(t *stewardv1.Task, r *stewardv1.BudgetRaised) (func(), error) {
	b := t.Contract.GetBudget()
	var line *stewardv1.MilestoneBudget
	var tokens, cost int64 // the other lines'
	for _, m := range b.GetMilestones() {
		if m.MilestoneId == r.MilestoneId {
			line = m
			continue
		}
		tokens, cost = tokens+m.MaxTokens, cost+m.MaxCostMicros
	}
	switch {
	case line == nil:
		return nil, errs.Field("milestone_id", "task %s has no budget line for milestone %s (%v)", t.Contract.GetTaskId(), errs.Quote(r.MilestoneId), MilestoneIDs(t.Contract))
	case r.MaxTokens != 0 && (line.MaxTokens == 0 || r.MaxTokens <= line.MaxTokens):
		return nil, errs.Field("max_tokens", "%d does not raise milestone %s's token limit %d (zero is none)", r.MaxTokens, r.MilestoneId, line.MaxTokens)
	case r.MaxCostMicros != 0 && (line.MaxCostMicros == 0 || r.MaxCostMicros <= line.MaxCostMicros):
		return nil, errs.Field("max_cost_micros", "%d does not raise milestone %s's cost limit %d (zero is none)", r.MaxCostMicros, r.MilestoneId, line.MaxCostMicros)
	case b.GetMaxTokens() > 0 && r.MaxTokens > b.GetMaxTokens()-tokens:
		return nil, errs.Field("max_tokens", "milestone token limits would add up to more than the task's %d: raise the task's first", b.GetMaxTokens())
	case b.GetMaxCostMicros() > 0 && r.MaxCostMicros > b.GetMaxCostMicros()-cost:
		return nil, errs.Field("max_cost_micros", "milestone cost limits would add up to more than the task's %d: raise the task's first", b.GetMaxCostMicros())
	}
	return func() {
		t.Contract = proto.CloneOf(t.Contract)
		for _, m := range t.Contract.Budget.Milestones {
			if m.MilestoneId == r.MilestoneId {
				if r.MaxTokens != 0 {
					m.MaxTokens = r.MaxTokens
				}
				if r.MaxCostMicros != 0 {
					m.MaxCostMicros = r.MaxCostMicros
				}
			}
		}
		u := usage(t)
		u.Alerts = slices.DeleteFunc(u.Alerts, func(key string) bool {
			_, rest, _ := strings.Cut(key, ":") // "cost:80:<milestone>" (AlertKey)
			_, milestone, _ := strings.Cut(rest, ":")
			return milestone == r.MilestoneId
		})
	}, nil
}
