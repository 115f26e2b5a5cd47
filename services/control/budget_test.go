package control_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/steward-run/steward/pkg/errs"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// TestUsageAndRaises records usage once per request id, refuses bad
// figures naming the field, and lets a budget only go up.
func TestUsageAndRaises(t *testing.T) {
	ctx := context.Background()
	r := idleHarness(t)
	ctl := r.ctl
	req := validRequest("budgeted")
	req.Contract.Budget = &stewardv1.Budget{MaxTokens: 1000, MaxCostMicros: 5000, Currency: "USD"}
	tk, _, err := ctl.CreateTask(ctx, "t", req)
	if err != nil {
		t.Fatal(err)
	}
	id := tk.Contract.TaskId
	for range 2 {
		if tk, err = ctl.ReportUsage(ctx, "agent", &stewardv1.ReportUsageRequest{TaskId: id, Tokens: 120, CostMicros: 30, Model: "m", RequestId: "u1"}); err != nil {
			t.Fatal(err)
		}
	}
	if tk.BudgetUsed.GetTokens() != 120 || tk.BudgetUsed.GetCostMicros() != 30 {
		t.Errorf("usage %v after one report sent twice", tk.BudgetUsed)
	}
	for _, tc := range []struct {
		req   *stewardv1.ReportUsageRequest
		field string
	}{
		{&stewardv1.ReportUsageRequest{TaskId: id, Tokens: -1}, "tokens"},
		{&stewardv1.ReportUsageRequest{TaskId: id}, "tokens"},
		{&stewardv1.ReportUsageRequest{TaskId: id, CostMicros: 1, MilestoneId: "nope"}, "milestone_id"},
		{&stewardv1.ReportUsageRequest{Tokens: 1}, "task_id"},
	} {
		if _, err := ctl.ReportUsage(ctx, "agent", tc.req); !errs.Is(err, errs.Invalid) || !strings.Contains(err.Error(), tc.field) {
			t.Errorf("%v: got %v, want an invalid %s", tc.req, err, tc.field)
		}
	}
	// A negative limit names the field that is negative, not its sibling.
	for _, tc := range []struct {
		req   *stewardv1.RaiseBudgetRequest
		field string
	}{
		{&stewardv1.RaiseBudgetRequest{TaskId: id, MaxCostMicros: -1, Reason: "r"}, "max_cost_micros"},
		{&stewardv1.RaiseBudgetRequest{TaskId: id, MaxTokens: -1, Reason: "r"}, "max_tokens"},
		{&stewardv1.RaiseBudgetRequest{TaskId: id, MaxTokens: 2000, MaxCostMicros: -1, Reason: "r"}, "max_cost_micros"},
	} {
		var e *errs.Error
		if _, err := ctl.RaiseBudget(ctx, "owner", tc.req); !errors.As(err, &e) || e.Code != errs.Invalid || e.Field != tc.field {
			t.Errorf("%v: got %v, want an invalid %s", tc.req, err, tc.field)
		}
	}
	if _, err := ctl.RaiseBudget(ctx, "owner", &stewardv1.RaiseBudgetRequest{TaskId: id, MaxCostMicros: 4000, Reason: "less"}); !errs.Is(err, errs.Invalid) || !strings.Contains(err.Error(), "max_cost_micros") {
		t.Errorf("lowering: %v", err)
	}
	if _, err := ctl.RaiseBudget(ctx, "owner", &stewardv1.RaiseBudgetRequest{TaskId: id, MaxCostMicros: 9000}); !errs.Is(err, errs.Invalid) || !strings.Contains(err.Error(), "reason") {
		t.Errorf("no reason: %v", err)
	}
	tk, err = ctl.RaiseBudget(ctx, "owner", &stewardv1.RaiseBudgetRequest{TaskId: id, MaxCostMicros: 9000, Reason: "more data"})
	if err != nil {
		t.Fatal(err)
	}
	if tk.Contract.Budget.MaxCostMicros != 9000 || tk.Contract.Budget.MaxTokens != 1000 {
		t.Errorf("budget %v", tk.Contract.Budget)
	}
}
