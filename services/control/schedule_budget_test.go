package control_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/steward-run/steward/pkg/errs"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// TestScheduleRunsBudget: runs of 400 tokens under a runs budget of 1000
// tokens: two start, the third firing is recorded OVER_BUDGET and makes no
// run, and so is every later one, across a restart.
func TestScheduleRunsBudget(t *testing.T) {
	r := newSchedules(t)
	req := hourly(stewardv1.CatchUpRule_CATCH_UP_RULE_NONE, 0, stewardv1.OverlapPolicy_OVERLAP_POLICY_SKIP, 0)
	req.Template.Contract.Budget = &stewardv1.Budget{MaxTokens: 400}
	req.Template.RunsBudget = &stewardv1.RunsBudget{MaxTokens: 1000}
	s := r.create(req)
	for range 2 {
		s = r.tick(s.ScheduleId, time.Hour)
		if _, err := r.ctl.CancelTask(context.Background(), "alice", &stewardv1.CancelTaskRequest{TaskId: s.LastTaskId}); err != nil {
			t.Fatal(err)
		}
	}
	r.restart()
	s = r.tick(s.ScheduleId, time.Hour)
	s = r.tick(s.ScheduleId, time.Hour)
	if got := firings(s, 0); got != "+1h started, +2h started, +3h over_budget, +4h over_budget" {
		t.Fatalf("firings: %s", got)
	}
	if s.RunsStarted != 2 || s.CommittedTokens != 800 {
		t.Fatalf("%d runs committed %d tokens, want 2 and 800", s.RunsStarted, s.CommittedTokens)
	}
	if f := s.RecentFirings[2]; f.TaskId != "" || !strings.Contains(f.Reason, "800 tokens committed") {
		t.Fatalf("the refused firing: %v", f)
	}
}

// TestScheduleRunsBudgetChecks: a runs budget bounds a dimension the
// template's budget bounds too, and one run fits in it.
func TestScheduleRunsBudgetChecks(t *testing.T) {
	r := newSchedules(t)
	for _, tc := range []struct {
		run   *stewardv1.Budget
		runs  *stewardv1.RunsBudget
		field string
	}{
		{nil, &stewardv1.RunsBudget{MaxTokens: 10}, "template.runs_budget.max_tokens"},
		{&stewardv1.Budget{MaxTokens: 20}, &stewardv1.RunsBudget{MaxTokens: 10}, "template.runs_budget.max_tokens"},
		{&stewardv1.Budget{MaxTokens: 5}, &stewardv1.RunsBudget{MaxCostMicros: 10}, "template.runs_budget.max_cost_micros"},
		{&stewardv1.Budget{MaxTokens: 5}, &stewardv1.RunsBudget{MaxCostMicros: -1}, "template.runs_budget.max_cost_micros"},
		{&stewardv1.Budget{MaxTokens: 5}, &stewardv1.RunsBudget{}, "template.runs_budget"},
	} {
		req := hourly(stewardv1.CatchUpRule_CATCH_UP_RULE_NONE, 0, stewardv1.OverlapPolicy_OVERLAP_POLICY_SKIP, 0)
		req.Template.Contract.Budget, req.Template.RunsBudget = tc.run, tc.runs
		_, _, err := r.ctl.CreateSchedule(context.Background(), "alice", req)
		var e *errs.Error
		if !errs.Is(err, errs.Invalid) || !errors.As(err, &e) || e.Field != tc.field {
			t.Errorf("%v under %v: want invalid %s, got %v", tc.runs, tc.run, tc.field, err)
		}
	}
}
