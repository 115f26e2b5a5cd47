package control

import (
	"context"
	"fmt"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/proto"

	"github.com/steward-run/steward/pkg/content"
	"github.com/steward-run/steward/pkg/errs"
	"github.com/steward-run/steward/pkg/event"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/requestid"
	"github.com/steward-run/steward/pkg/rpc"
	"github.com/steward-run/steward/pkg/task"
)

// ReportUsage records model usage the agent reports against the task's
// budget: every consumption is an event. With a request id it is
// idempotent. Spending is recorded even past the budget — it happened —
// and governance suspends the task before its next permit.
func (dg *delegation) ReportUsage(ctx context.Context, principal string, req *stewardv1.ReportUsageRequest) (_ *stewardv1.Task, err error) {
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
	u, err := dg.claimRequestID(ctx, principal, requestid.ReportUsage, req.TaskId, req.RequestId, req)
	if err != nil {
		return nil, err
	}
	defer u.settle(ctx, &err)
	id := u.id
	source := ""
	if req.Model != "" {
		source = "model:" + req.Model
	}
	return dg.command(ctx, principal, req.TaskId, id, req.RequestId, &stewardv1.BudgetConsumed{
		Tokens: req.Tokens, CostMicros: req.CostMicros, MilestoneId: req.MilestoneId, Source: source,
	})
}

// RaiseBudget raises the task's limits: an explicit command, recorded
// with who raised it and why. A limit may only go up.
func (dg *delegation) RaiseBudget(ctx context.Context, principal string, req *stewardv1.RaiseBudgetRequest) (_ *stewardv1.Task, err error) {
	if err := checkCommand(req.TaskId, req.RequestId, req.Reason); err != nil {
		return nil, err
	}
	if req.Reason == "" {
		return nil, errs.Field("reason", "is required: say why the budget goes up")
	}
	if err := checkText("milestone_id", req.MilestoneId, MaxRefLen, false); err != nil {
		return nil, err
	}
	u, err := dg.claimRequestID(ctx, principal, requestid.RaiseBudget, req.TaskId, req.RequestId, req)
	if err != nil {
		return nil, err
	}
	defer u.settle(ctx, &err)
	id := u.id
	t, err := dg.command(ctx, principal, req.TaskId, id, req.RequestId, &stewardv1.BudgetRaised{
		MaxTokens: req.MaxTokens, MaxCostMicros: req.MaxCostMicros, Reason: req.Reason, MilestoneId: req.MilestoneId,
	})
	if err != nil {
		return nil, err
	}
	return dg.resumeIfFunded(ctx, principal, t)
}

// stillSpent refuses to resume a task suspended for a budget that is still
// spent, naming the line.
func stillSpent(t *stewardv1.Task) error {
	if t.Status != stewardv1.TaskStatus_TASK_STATUS_SUSPENDED || t.SuspendedFor != stewardv1.SuspendCause_SUSPEND_CAUSE_BUDGET_SPENT {
		return nil
	}
	if line, spent := task.Spent(t); spent {
		return errs.New(errs.FailedPrecondition, "task %s is suspended because its budget is spent (%s): a budget owner raises it with RaiseBudget, which resumes the task", t.Contract.GetTaskId(), line)
	}
	return nil
}

// resumeIfFunded resumes a task that governance suspended because its
// budget was spent, once a raise has lifted it: the raise is the decision
// to go on. A task suspended for anything else, or still spent on another
// limit, stays suspended. The resume's id derives from the task's last
// sequence, which a repeat of the same raise leaves as it was.
func (dg *delegation) resumeIfFunded(ctx context.Context, principal string, t *stewardv1.Task) (*stewardv1.Task, error) {
	if _, spent := task.Spent(t); spent || t.Status != stewardv1.TaskStatus_TASK_STATUS_SUSPENDED ||
		t.SuspendedFor != stewardv1.SuspendCause_SUSPEND_CAUSE_BUDGET_SPENT {
		return t, nil
	}
	taskID := t.Contract.GetTaskId()
	id := event.ID(taskID, "budget-resume", fmt.Sprint(t.LastSequence))
	return dg.apply(ctx, taskID, func(cur *stewardv1.Task) (*stewardv1.Event, error) {
		if cur.Status != stewardv1.TaskStatus_TASK_STATUS_SUSPENDED || cur.SuspendedFor != stewardv1.SuspendCause_SUSPEND_CAUSE_BUDGET_SPENT {
			return nil, nil
		}
		if _, spent := task.Spent(cur); spent {
			return nil, nil
		}
		return dg.event(event.Meta{ID: id, TaskID: taskID, Actor: dg.actor(principal)},
			&stewardv1.TaskResumed{Reason: "the budget was raised by " + principal})
	})
}

func (s *taskService) ReportUsage(ctx context.Context, req *connect.Request[stewardv1.ReportUsageRequest]) (*connect.Response[stewardv1.ReportUsageResponse], error) {
	t, err := s.plane.delegation.ReportUsage(ctx, rpc.Principal(ctx), req.Msg)
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&stewardv1.ReportUsageResponse{Task: t}), nil
}

// RaiseBudget answers with the task as raised. A budget owner holds a
// role, not a part in the task: one the task does not name gets it
// without its content, as GetTask would show it to them (content.Blind;
// docs/results.md).
func (s *taskService) RaiseBudget(ctx context.Context, req *connect.Request[stewardv1.RaiseBudgetRequest]) (*connect.Response[stewardv1.RaiseBudgetResponse], error) {
	who := rpc.Caller(ctx)
	t, err := s.plane.delegation.RaiseBudget(ctx, who.Principal, req.Msg)
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&stewardv1.RaiseBudgetResponse{Task: s.shown(ctx, who, t)}), nil
}

// shown is t as GetTask would show it to who: without its content for a
// caller the task does not name (content.Blind; docs/results.md), such as
// a role's holder deciding on it.
func (s *taskService) shown(ctx context.Context, who rpc.Identity, t *stewardv1.Task) *stewardv1.Task {
	if t == nil || content.Reads(who, content.PartiesOf(t), content.Ancestors(ctx, s.plane.tasks)) {
		return t
	}
	// A copy: the task returned shares its parts with the fold.
	t = proto.CloneOf(t)
	content.Blind{Digest: s.plane.secrets.Digest, Roles: who.Roles}.Task(t)
	return t
}
