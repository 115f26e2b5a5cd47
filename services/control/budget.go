package control

import (
	"context"

	"connectrpc.com/connect"

	"github.com/steward-run/steward/pkg/errs"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/rpc"
)

// BudgetOwnerRole may raise a task's budget when tokens are in use.
const BudgetOwnerRole = "budget-owner"

// ReportUsage records model usage the agent reports against the task's
// budget: every consumption is an event. With a request id it is
// idempotent. Spending is recorded even past the budget — it happened —
// and governance suspends the task before its next permit.
func (p *Plane) ReportUsage(ctx context.Context, principal string, req *stewardv1.ReportUsageRequest) (*stewardv1.Task, error) {
	if err := checkCommand(req.TaskId, req.RequestId, ""); err != nil {
		return nil, err
	}
	switch {
	case req.Tokens < 0:
		return nil, errs.Field("tokens", "must not be negative")
	case req.CostMicros < 0:
		return nil, errs.Field("cost_micros", "must not be negative")
	case req.Tokens == 0 && req.CostMicros == 0:
		return nil, errs.Field("tokens", "report some tokens or some cost")
	}
	if err := checkText("model", req.Model, MaxRefLen, false); err != nil {
		return nil, err
	}
	if err := checkText("milestone_id", req.MilestoneId, MaxRefLen, false); err != nil {
		return nil, err
	}
	source := ""
	if req.Model != "" {
		source = "model:" + req.Model
	}
	return p.Apply(ctx, principal, req.TaskId, req.RequestId, &stewardv1.BudgetConsumed{
		Tokens: req.Tokens, CostMicros: req.CostMicros, MilestoneId: req.MilestoneId, Source: source,
	})
}

// RaiseBudget raises the task's limits: an explicit command, recorded
// with who raised it and why. A limit may only go up.
func (p *Plane) RaiseBudget(ctx context.Context, principal string, req *stewardv1.RaiseBudgetRequest) (*stewardv1.Task, error) {
	if err := checkCommand(req.TaskId, req.RequestId, req.Reason); err != nil {
		return nil, err
	}
	if req.Reason == "" {
		return nil, errs.Field("reason", "is required: say why the budget goes up")
	}
	return p.Apply(ctx, principal, req.TaskId, req.RequestId, &stewardv1.BudgetRaised{
		MaxTokens: req.MaxTokens, MaxCostMicros: req.MaxCostMicros, Reason: req.Reason,
	})
}

func (s *taskService) ReportUsage(ctx context.Context, req *connect.Request[stewardv1.ReportUsageRequest]) (*connect.Response[stewardv1.ReportUsageResponse], error) {
	if err := s.plane.mayActFor(ctx, rpc.Caller(ctx), req.Msg.TaskId); err != nil {
		return nil, err
	}
	t, err := s.plane.ReportUsage(ctx, rpc.Principal(ctx), req.Msg)
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&stewardv1.ReportUsageResponse{Task: t}), nil
}

func (s *taskService) RaiseBudget(ctx context.Context, req *connect.Request[stewardv1.RaiseBudgetRequest]) (*connect.Response[stewardv1.RaiseBudgetResponse], error) {
	if who := rpc.Caller(ctx); who.Verified && !who.HasRole(BudgetOwnerRole) {
		return nil, errs.New(errs.PermissionDenied, "%s may not raise budgets: that needs the %s role", who.Principal, BudgetOwnerRole)
	}
	t, err := s.plane.RaiseBudget(ctx, rpc.Principal(ctx), req.Msg)
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&stewardv1.RaiseBudgetResponse{Task: t}), nil
}
