package governance

import (
	"context"
	"fmt"
	"slices"

	"github.com/steward-run/steward/pkg/event"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/task"
)

// BudgetThresholds are the percentages of a limit at which the budget
// guard raises an alert; at the last, it also suspends the task.
var BudgetThresholds = []uint32{50, 80, 100}

// guardBudget reacts to spending (reported usage, or a call's cost on its
// outcome) and to a raise: for every limit whose next threshold the
// spending has crossed it records an alert and tells the log; at 100 % it
// suspends the task, so that nothing more is permitted until someone
// raises the budget and resumes it. Governance checks the budget again
// before every permit (see permit), so a task overspends by at most what
// its calls already in flight cost.
func (p *Plane) guardBudget(ctx context.Context, rec *stewardv1.EventRecord) error {
	if o := rec.Event.GetActionOutcomeRecorded(); o != nil && o.GetOutcome().GetCostMicros() == 0 && o.GetOutcome().GetTokens() == 0 {
		return nil // nothing spent
	}
	if d := rec.Event.GetActionDenied(); d != nil && d.GetCostMicros() == 0 {
		return nil
	}
	if d := rec.Event.GetDecisionRecorded(); d != nil && !task.DecisionCharges(d.GetDecision()) {
		return nil
	}
	taskID := rec.Event.TaskId
	for range len(BudgetThresholds) * 16 { // bounded: every pass records one alert
		var alert *stewardv1.BudgetAlerted
		t, err := p.tasks.Update(ctx, taskID, func(t *stewardv1.Task) (*stewardv1.Event, error) {
			alert = nextAlert(t)
			if alert == nil {
				return nil, nil
			}
			// The id names the state it is raised in: after a raise starts
			// the alerts over, or a release takes the task back under a
			// threshold, crossing it again is a new alert.
			key := task.AlertKey(alert.Dimension, alert.Percent, alert.MilestoneId)
			id := event.ID(taskID, "budget-alert", key, fmt.Sprint(t.LastSequence))
			return event.New(p.meta(taskID, id, rec.Event), alert)
		})
		if err != nil {
			return err
		}
		if alert == nil {
			return p.suspendIfSpent(ctx, t, rec.Event)
		}
		if !slices.Contains(t.BudgetUsed.GetAlerts(), task.AlertKey(alert.Dimension, alert.Percent, alert.MilestoneId)) {
			return nil // not recorded after all; a redelivery tries again
		}
		p.notifyBudget(ctx, taskID, alert)
	}
	return nil
}

// BudgetNotifier is told about a budget alert once it is on the log: it is
// how a task's owners hear that it has spent 50, 80 or 100 % of a limit
// (mail, chat, a pager). It runs once per alert, from the reaction that
// recorded it — so a crash between the two loses the call, never the
// event — and should return quickly.
type BudgetNotifier func(ctx context.Context, taskID string, alert *stewardv1.BudgetAlerted)

// WithBudgetNotifier sets what is told about budget alerts; the default
// logs a warning.
func WithBudgetNotifier(n BudgetNotifier) Option {
	return func(p *Plane) {
		if n != nil {
			p.notifyBudget = n
		}
	}
}

// logBudgetAlert is the default BudgetNotifier.
func (p *Plane) logBudgetAlert(_ context.Context, taskID string, alert *stewardv1.BudgetAlerted) {
	p.logger.Warn("task budget alert", "task", taskID, "dimension", alert.Dimension, "percent", alert.Percent,
		"used", alert.Used, "limit", alert.Limit, "milestone", alert.MilestoneId)
}

// nextAlert returns the first alert t's spending calls for and has not
// raised, or nil.
func nextAlert(t *stewardv1.Task) *stewardv1.BudgetAlerted {
	if task.Terminal(t.Status) {
		return nil
	}
	for _, l := range task.BudgetLines(t) {
		for _, pct := range BudgetThresholds {
			// In floating point so that nothing overflows; budgets are
			// far below where float64 stops counting exactly.
			if float64(l.Used) < float64(l.Limit)*float64(pct)/100 {
				break
			}
			if !slices.Contains(t.BudgetUsed.GetAlerts(), task.AlertKey(l.Dimension, pct, l.MilestoneID)) {
				return &stewardv1.BudgetAlerted{Dimension: l.Dimension, Percent: pct, Used: l.Used, Limit: l.Limit, MilestoneId: l.MilestoneID}
			}
		}
	}
	return nil
}

// suspendIfSpent suspends an active task whose budget is used up.
func (p *Plane) suspendIfSpent(ctx context.Context, t *stewardv1.Task, cause *stewardv1.Event) error {
	if t == nil {
		return nil
	}
	taskID := t.Contract.GetTaskId()
	err := p.tasks.Write(ctx, taskID, func(t *stewardv1.Task) (*stewardv1.Event, error) {
		line, spent := task.Spent(t)
		if !spent || !task.Active(t.Status) {
			return nil, nil
		}
		// The id names the state it suspends: a task given budget back
		// (a sub-task's release) and spent again is suspended again.
		return event.New(p.meta(taskID, event.ID(taskID, "budget-suspended", fmt.Sprint(t.LastSequence)), cause),
			&stewardv1.TaskSuspended{Reason: "the budget is spent: " + line.String() + "; raise it (RaiseBudget) and the task resumes", Cause: stewardv1.SuspendCause_SUSPEND_CAUSE_BUDGET_SPENT})
	})
	return err
}

// budgetSpentReason is why an action of a task whose budget is spent gets
// no permit.
func budgetSpentReason(line task.BudgetLine) string {
	return "the task's budget is spent: " + line.String() + "; raise it (RaiseBudget) and propose the action again"
}
