package schedule

import (
	"fmt"

	"github.com/steward-run/steward/pkg/errs"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// CheckRunsBudget checks t's runs_budget against its contract's budget:
// each dimension it bounds the contract must bound too (a run without a
// bound would commit nothing the sum could hold), and one run must fit.
// Errors name the field under "template.".
func CheckRunsBudget(t *stewardv1.ScheduleTemplate) error {
	rb, run := t.GetRunsBudget(), t.GetContract().GetBudget()
	if rb == nil {
		return nil
	}
	switch {
	case rb.MaxTokens < 0:
		return errs.Field("template.runs_budget.max_tokens", "must not be negative")
	case rb.MaxCostMicros < 0:
		return errs.Field("template.runs_budget.max_cost_micros", "must not be negative")
	case rb.MaxTokens == 0 && rb.MaxCostMicros == 0:
		return errs.Field("template.runs_budget", "bounds nothing: set max_tokens or max_cost_micros")
	case rb.MaxTokens > 0 && (run.GetMaxTokens() <= 0 || run.GetMaxTokens() > rb.MaxTokens):
		return errs.Field("template.runs_budget.max_tokens", "needs the template's budget.max_tokens set and at most %d", rb.MaxTokens)
	case rb.MaxCostMicros > 0 && (run.GetMaxCostMicros() <= 0 || run.GetMaxCostMicros() > rb.MaxCostMicros):
		return errs.Field("template.runs_budget.max_cost_micros", "needs the template's budget.max_cost_micros set and at most %d", rb.MaxCostMicros)
	}
	return nil
}

// OverBudget says why one more run of s would take the sum of its runs'
// budgets past its runs_budget, or "" when it would not.
func OverBudget(s *stewardv1.Schedule) string {
	rb, run := s.GetTemplate().GetRunsBudget(), s.GetTemplate().GetContract().GetBudget()
	if rb == nil {
		return ""
	}
	if rb.MaxTokens > 0 && s.CommittedTokens+run.GetMaxTokens() > rb.MaxTokens {
		return fmt.Sprintf("runs budget: %d tokens committed to %d runs, another run's %d would pass %d", s.CommittedTokens, s.RunsStarted, run.GetMaxTokens(), rb.MaxTokens)
	}
	if rb.MaxCostMicros > 0 && s.CommittedCostMicros+run.GetMaxCostMicros() > rb.MaxCostMicros {
		return fmt.Sprintf("runs budget: %d cost micros committed to %d runs, another run's %d would pass %d", s.CommittedCostMicros, s.RunsStarted, run.GetMaxCostMicros(), rb.MaxCostMicros)
	}
	return ""
}

// commit adds one run's budget to what s's runs have committed.
func commit(s *stewardv1.Schedule) {
	run := s.GetTemplate().GetContract().GetBudget()
	s.CommittedTokens += run.GetMaxTokens()
	s.CommittedCostMicros += run.GetMaxCostMicros()
}
