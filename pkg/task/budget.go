package task

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"google.golang.org/protobuf/proto"

	"github.com/steward-run/steward/pkg/errs"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// budgetStep checks a budget event against t and returns the change to
// make; ok is false for events that are not about budgets. Spending is
// recorded whatever the budget says — it happened — and only a task that
// has ended takes no more; the guards that stop spending (alerts, the
// suspension, the check before every permit) are governance's.
func budgetStep(t *stewardv1.Task, ev *stewardv1.Event) (commit func(), ok bool, err error) {
	switch p := ev.Payload.(type) {
	case *stewardv1.Event_BudgetConsumed:
		c := p.BudgetConsumed
		if Terminal(t.Status) && c.ReservedFor == "" {
			return nil, true, illegal(t, "spend for") // a fork's reservation it lends still
		}
		if c.MilestoneId != "" && !KnownMilestone(t.Contract, c.MilestoneId) {
			return nil, true, unknownMilestone(t, "milestone_id", c.MilestoneId)
		}
		if err := CheckSpend(t, c.Tokens, c.CostMicros); err != nil {
			return nil, true, err
		}
		return func() { spend(t, c.Tokens, c.CostMicros, c.MilestoneId) }, true, nil
	case *stewardv1.Event_BudgetReleased:
		commit, err := release(t, p.BudgetReleased)
		return commit, true, err
	case *stewardv1.Event_BudgetAlerted:
		a := p.BudgetAlerted
		key := AlertKey(a.Dimension, a.Percent, a.MilestoneId)
		if slices.Contains(t.BudgetUsed.GetAlerts(), key) {
			return nil, true, errs.New(errs.FailedPrecondition, "task %s already raised alert %s", t.Contract.GetTaskId(), key)
		}
		return func() {
			u := usage(t)
			u.Alerts = append(u.Alerts, key)
		}, true, nil
	case *stewardv1.Event_BudgetRaised:
		commit, err := raise(t, p.BudgetRaised)
		return commit, true, err
	}
	return nil, false, nil
}

// CheckSpend refuses spending that is negative or would overflow the
// task's running totals.
func CheckSpend(t *stewardv1.Task, tokens, costMicros int64) error {
	switch {
	case tokens < 0:
		return errs.Field("tokens", "must not be negative")
	case costMicros < 0:
		return errs.Field("cost_micros", "must not be negative")
	case tokens > math.MaxInt64-t.BudgetUsed.GetTokens():
		return errs.Field("tokens", "would overflow the task's total")
	case costMicros > math.MaxInt64-t.BudgetUsed.GetCostMicros():
		return errs.Field("cost_micros", "would overflow the task's total")
	}
	return nil
}

// spend adds to t's totals, and to a milestone's when named.
func spend(t *stewardv1.Task, tokens, costMicros int64, milestone string) {
	u := usage(t)
	u.Tokens += tokens
	u.CostMicros += costMicros
	if milestone == "" {
		return
	}
	for _, m := range u.Milestones {
		if m.MilestoneId == milestone {
			m.Tokens += tokens
			m.CostMicros += costMicros
			return
		}
	}
	u.Milestones = append(u.Milestones, &stewardv1.MilestoneUsage{MilestoneId: milestone, Tokens: tokens, CostMicros: costMicros})
}

// usage returns t's usage, a copy of its own: views handed out earlier may
// share the old one.
func usage(t *stewardv1.Task) *stewardv1.BudgetUsage {
	if t.BudgetUsed == nil {
		t.BudgetUsed = &stewardv1.BudgetUsage{}
	} else {
		t.BudgetUsed = proto.CloneOf(t.BudgetUsed)
	}
	return t.BudgetUsed
}

// AlertKey names one budget alert, as Task.budget_used.alerts lists them.
func AlertKey(dimension string, percent uint32, milestone string) string {
	k := fmt.Sprintf("%s:%d", dimension, percent)
	if milestone != "" {
		k += ":" + milestone
	}
	return k
}

// crossed reports whether t's spending still reaches the alert key (see
// AlertKey) names. Milestones are never released to, so their alerts
// stand.
func crossed(t *stewardv1.Task, key string) bool {
	dim, rest, _ := strings.Cut(key, ":")
	pct, milestone, _ := strings.Cut(rest, ":")
	percent, err := strconv.ParseUint(pct, 10, 32)
	if err != nil || milestone != "" {
		return true
	}
	for _, l := range BudgetLines(t) {
		if l.Dimension == dim && l.MilestoneID == "" {
			return float64(l.Used) >= float64(l.Limit)*float64(percent)/100
		}
	}
	return true
}

// BudgetLine is one limit of a task's budget and what is spent against it.
type BudgetLine struct {
	Dimension   string // "tokens" or "cost"
	MilestoneID string
	Used, Limit int64
}

// String says the line in words, e.g. "cost 1200000 of 1000000 micros
// (milestone m1)".
func (l BudgetLine) String() string {
	unit := "tokens"
	if l.Dimension == "cost" {
		unit = "micros"
	}
	s := fmt.Sprintf("%s %d of %d %s", l.Dimension, l.Used, l.Limit, unit)
	if l.MilestoneID != "" {
		s += " (milestone " + l.MilestoneID + ")"
	}
	return s
}

// BudgetLines lists every limit t's budget sets (a zero limit sets none),
// task-wide first, then per milestone.
func BudgetLines(t *stewardv1.Task) []BudgetLine {
	b, u := t.Contract.GetBudget(), t.BudgetUsed
	var out []BudgetLine
	add := func(dim, m string, used, limit int64) {
		if limit > 0 {
			out = append(out, BudgetLine{Dimension: dim, MilestoneID: m, Used: used, Limit: limit})
		}
	}
	add("tokens", "", u.GetTokens(), b.GetMaxTokens())
	add("cost", "", u.GetCostMicros(), b.GetMaxCostMicros())
	for _, m := range b.GetMilestones() {
		var mu *stewardv1.MilestoneUsage
		for _, x := range u.GetMilestones() {
			if x.MilestoneId == m.MilestoneId {
				mu = x
			}
		}
		add("tokens", m.MilestoneId, mu.GetTokens(), m.MaxTokens)
		add("cost", m.MilestoneId, mu.GetCostMicros(), m.MaxCostMicros)
	}
	return out
}

// Spent returns the first limit of t's budget that is used up, if any.
func Spent(t *stewardv1.Task) (BudgetLine, bool) {
	for _, l := range BudgetLines(t) {
		if l.Used >= l.Limit {
			return l, true
		}
	}
	return BudgetLine{}, false
}

// withinDelegation refuses to raise a delegated task's budget: what it
// may spend was reserved from its parent's budget when it was delegated,
// and only a new delegation reserves more; so is a task's that works for
// an objective, out of whose budget it reserved its own. A task's own
// budget owner may raise its budget.
func withinDelegation(t *stewardv1.Task) error {
	if parent := t.Contract.GetParentTaskId(); parent != "" {
		return errs.New(errs.FailedPrecondition, "task %s was delegated from task %s with the budget it has: raise the parent's budget and delegate again", t.Contract.GetTaskId(), parent)
	}
	if o := t.Contract.GetObjectiveId(); o != "" {
		// Its budget is its share of the objective's, reserved there.
		return errs.New(errs.FailedPrecondition, "task %s works for objective %s with the budget it reserved there: start another task for it", t.Contract.GetTaskId(), o)
	}
	return nil
}

// release checks a release of budget back to t and returns how to apply it.
func release(t *stewardv1.Task, r *stewardv1.BudgetReleased) (func(), error) {
	// An ended task takes it too: a sub-task may end after its parent.
	u := t.BudgetUsed
	switch {
	case r.Tokens < 0 || r.CostMicros < 0:
		return nil, errs.Field("tokens", "a release must not be negative")
	case r.Tokens > u.GetTokens() || r.CostMicros > u.GetCostMicros():
		return nil, errs.New(errs.FailedPrecondition, "task %s cannot release %d tokens and %d micro-units: it has used %d and %d",
			t.Contract.GetTaskId(), r.Tokens, r.CostMicros, u.GetTokens(), u.GetCostMicros())
	}
	return func() {
		u := usage(t)
		u.Tokens -= r.Tokens
		u.CostMicros -= r.CostMicros
		// What came back is spendable again, so the alerts it takes
		// the task back under are raised again when it gets there.
		u.Alerts = slices.DeleteFunc(u.Alerts, func(key string) bool { return !crossed(t, key) })
	}, nil
}

// raise checks a raise of t's budget limits and returns how to apply it.
func raise(t *stewardv1.Task, r *stewardv1.BudgetRaised) (func(), error) {
	b := t.Contract.GetBudget()
	switch {
	case Terminal(t.Status):
		return nil, illegal(t, "raise the budget of")
	case r.MaxTokens < 0:
		return nil, errs.Field("max_tokens", "must not be negative")
	case r.MaxCostMicros < 0:
		return nil, errs.Field("max_cost_micros", "must not be negative")
	case r.MaxTokens == 0 && r.MaxCostMicros == 0:
		return nil, errs.Field("max_tokens", "name a new token or cost limit")
	case r.MilestoneId == "" && r.MaxTokens != 0 && r.MaxTokens <= b.GetMaxTokens():
		return nil, errs.Field("max_tokens", "%d is not above the current limit %d", r.MaxTokens, b.GetMaxTokens())
	case r.MilestoneId == "" && r.MaxCostMicros != 0 && r.MaxCostMicros <= b.GetMaxCostMicros():
		return nil, errs.Field("max_cost_micros", "%d is not above the current limit %d", r.MaxCostMicros, b.GetMaxCostMicros())
	}
	if err := withinDelegation(t); err != nil {
		return nil, err
	}
	if r.MilestoneId != "" {
		return raiseMilestone(t, r) // milestone.go
	}
	return func() {
		t.Contract = proto.CloneOf(t.Contract)
		if t.Contract.Budget == nil {
			t.Contract.Budget = &stewardv1.Budget{}
		}
		if r.MaxTokens != 0 {
			t.Contract.Budget.MaxTokens = r.MaxTokens
		}
		if r.MaxCostMicros != 0 {
			t.Contract.Budget.MaxCostMicros = r.MaxCostMicros
		}
		// Alerts start over against the new limits.
		u := usage(t)
		u.Alerts = nil
	}, nil
}
