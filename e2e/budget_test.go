package e2e_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"connectrpc.com/connect"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/stewardtest"
)

// TestBudgetIsGuardedEndToEnd runs the real binary: tool calls cost what
// the tool's contract says, reported model usage adds to it, alerts come
// at 50, 80 and 100 %, the task is suspended when its budget is spent and
// takes no new action; only the budget owner may raise it, and the raise
// resumes the task, which goes on.
func TestBudgetIsGuardedEndToEnd(t *testing.T) {
	tool := stewardtest.StartTool(t)
	tools := fmt.Sprintf(`{"name": "search", "version": "1", "effectClass": "EFFECT_CLASS_READ", "dataSensitivity": "DATA_SENSITIVITY_INTERNAL",
	  "costMicrosPerCall": 400, "http": {"url": %q}}`, tool.URL+"/search")
	h := startSteward(t, setup{tools: []string{tools}})
	agent := h.agent
	ctx := context.Background()

	k := contract()
	k.Budget = &stewardv1.Budget{MaxCostMicros: 1000, Currency: "USD"}
	taskID := h.create(t, "budget", k)

	a := propose(t, agent, taskID, "s1", "search", map[string]any{"q": "incidents"})
	waitAction(t, agent.clients, taskID, a.ActionId, stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED)
	if _, err := agent.tasks.ReportUsage(ctx, connect.NewRequest(&stewardv1.ReportUsageRequest{TaskId: taskID, Tokens: 900, CostMicros: 700, Model: "m", RequestId: "u1"})); err != nil {
		t.Fatal(err)
	}
	tk := waitStatus(t, agent.clients, taskID, stewardv1.TaskStatus_TASK_STATUS_SUSPENDED)
	if tk.BudgetUsed.GetCostMicros() != 1100 || len(tk.BudgetUsed.GetAlerts()) != 3 {
		t.Fatalf("usage %v, want 1100 spent and three alerts", tk.BudgetUsed)
	}
	// Suspended: the next action is not even taken.
	if _, err := agent.tasks.ProposeAction(ctx, connect.NewRequest(&stewardv1.ProposeActionRequest{
		TaskId: taskID, ProposalId: "s2", Tool: "search", Target: "acct:42",
	})); connect.CodeOf(err) != connect.CodeFailedPrecondition {
		t.Fatalf("a proposal while suspended: %v, want failed_precondition", err)
	}

	// A resume by hand does not lift a spent budget; only a raise does.
	if _, err := agent.tasks.ResumeTask(ctx, connect.NewRequest(&stewardv1.ResumeTaskRequest{TaskId: taskID, Reason: "go on"})); connect.CodeOf(err) != connect.CodeFailedPrecondition ||
		!strings.Contains(err.Error(), "RaiseBudget") {
		t.Fatalf("a resume while the budget is spent: %v, want failed_precondition naming RaiseBudget", err)
	}

	raise := &stewardv1.RaiseBudgetRequest{TaskId: taskID, MaxCostMicros: 5000, Reason: "finance agreed"}
	if _, err := agent.tasks.RaiseBudget(ctx, connect.NewRequest(raise)); connect.CodeOf(err) != connect.CodePermissionDenied {
		t.Fatalf("raise by the agent: %v, want permission_denied", err)
	}
	owner := h.funder
	raised, err := owner.tasks.RaiseBudget(ctx, connect.NewRequest(raise))
	if err != nil {
		t.Fatal(err)
	}
	// The raise by the budget owner resumes the task it suspended.
	if tk := raised.Msg.Task; tk.Status != stewardv1.TaskStatus_TASK_STATUS_RUNNING || !strings.Contains(tk.StatusReason, "raised by user:fin") {
		t.Fatalf("after the raise: %s (%s), want running again", tk.Status, tk.StatusReason)
	}
	again := propose(t, agent, taskID, "s3", "search", map[string]any{"q": "again"})
	_, done := waitAction(t, agent.clients, taskID, again.ActionId, stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED)
	if done.Outcome.CostMicros != 400 {
		t.Errorf("call cost %d, want the contract's 400", done.Outcome.CostMicros)
	}

	// The client commands present a token to a server with --auth.
	if out := run(t, 1, "receipt", "--task", taskID, "--addr", h.url); !strings.Contains(out, "unauthenticated") {
		t.Errorf("receipt without a token: %s", out)
	}
	if md := run(t, 0, "receipt", "--task", taskID, "--addr", h.url, "--token", agentToken); !strings.Contains(md, "**Cost:** 1500 micro-units of USD") {
		t.Errorf("the receipt does not show the budget used:\n%s", md)
	}
}
