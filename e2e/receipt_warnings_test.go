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

// TestReceiptWarnsAndCarriesTheAgentsAccount runs the real binary with real
// HTTP tools. The agent searches, records a decision and produces with an
// execution report; its criterion fails (no summary artifact), so the
// task runs on; a wire waits for its approver and a charge times out with
// its outcome unknown. The receipt — over RPC and from `steward receipt`
// — warns of the unknown outcome, the waiting approval and the failed
// check, each naming what it is about, near the top; shows the report as
// the agent's account, labelled so; and a report naming an action the task
// does not have is refused naming the field.
func TestReceiptWarnsAndCarriesTheAgentsAccount(t *testing.T) {
	ctx := context.Background()
	tool := stewardtest.StartTool(t).Always("/charge", stewardtest.Late)
	tools := append(governedTools(tool), fmt.Sprintf(`{"name": "charge", "version": "1", "effectClass": "EFFECT_CLASS_IDEMPOTENT_WRITE", "dataSensitivity": "DATA_SENSITIVITY_INTERNAL",
	  "timeout": "1s", "http": {"url": %q}}`, tool.URL+"/charge"))
	h := startSteward(t, setup{tools: tools})
	agent := h.agent
	k := contract()
	k.AllowedTools = []string{"search", "wire", "charge"}
	k.AuthorizerRef = "user:bo"
	k.AcceptanceCriteria = []*stewardv1.AcceptanceCriterion{{Id: "has-summary", Expression: `"summary" in artifacts`}}
	taskID := h.create(t, "rcpt-warn", k)

	search := propose(t, agent, taskID, "read-1", "search", map[string]any{"q": "incidents"})
	waitAction(t, agent.clients, taskID, search.ActionId, stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED)
	if _, err := agent.tasks.RecordDecision(ctx, connect.NewRequest(&stewardv1.RecordDecisionRequest{TaskId: taskID, Decision: &stewardv1.Decision{
		DecisionId: "d1", Call: &stewardv1.ModelCall{Provider: "openai", ModelId: "gpt-a", TokensIn: 10, TokensOut: 2, Provenance: stewardv1.Provenance_PROVENANCE_REPORTED},
		LedTo: &stewardv1.Decision_NoAction{NoAction: &stewardv1.NoAction{}},
	}})); err != nil {
		t.Fatal(err)
	}
	report := &stewardv1.ExecutionReport{
		Summary:  "All incidents are summarised.",
		Steps:    []*stewardv1.ReportStep{{Description: "searched last week's incidents", ActionIds: []string{search.ActionId}, DecisionIds: []string{"d1"}}},
		LeftOpen: []string{"the pager export was not read"},
	}
	bad := &stewardv1.ExecutionReport{Steps: []*stewardv1.ReportStep{{Description: "paid", ActionIds: []string{"act-nope"}}}}
	_, err := agent.tasks.MarkProduced(ctx, connect.NewRequest(&stewardv1.MarkProducedRequest{TaskId: taskID, Report: bad}))
	if connect.CodeOf(err) != connect.CodeInvalidArgument || !strings.Contains(err.Error(), "report.steps[0].action_ids[0]") {
		t.Fatalf("a report naming an action the task does not have: %v, want invalid_argument naming report.steps[0].action_ids[0]", err)
	}
	if _, err := agent.tasks.MarkProduced(ctx, connect.NewRequest(&stewardv1.MarkProducedRequest{TaskId: taskID, Report: report})); err != nil {
		t.Fatal(err)
	}
	waitStatus(t, agent.clients, taskID, stewardv1.TaskStatus_TASK_STATUS_RUNNING)

	wire := propose(t, agent, taskID, "wire-1", "wire", map[string]any{"amount": 120})
	_, waiting := waitAction(t, agent.clients, taskID, wire.ActionId, stewardv1.ActionStatus_ACTION_STATUS_AWAITING_APPROVAL)
	charge := propose(t, agent, taskID, "charge-1", "charge", map[string]any{"amount": 5})
	waitAction(t, agent.clients, taskID, charge.ActionId, stewardv1.ActionStatus_ACTION_STATUS_UNKNOWN)

	resp, err := agent.query.GetReceipt(ctx, connect.NewRequest(&stewardv1.GetReceiptRequest{TaskId: taskID}))
	if err != nil {
		t.Fatal(err)
	}
	r := resp.Msg.Receipt
	found := map[stewardv1.ReceiptWarningKind]string{}
	for _, w := range r.Warnings {
		found[w.Kind] += w.About + " "
	}
	for kind, about := range map[stewardv1.ReceiptWarningKind]string{
		stewardv1.ReceiptWarningKind_RECEIPT_WARNING_KIND_UNKNOWN_OUTCOME:  charge.ActionId,
		stewardv1.ReceiptWarningKind_RECEIPT_WARNING_KIND_APPROVAL_WAITING: waiting.Approval.GetApprovalId(),
		stewardv1.ReceiptWarningKind_RECEIPT_WARNING_KIND_CHECK_FAILED:     "has-summary",
	} {
		if !strings.Contains(found[kind], about+" ") || about == "" {
			t.Errorf("no %s warning about %q among %v", kind, about, r.Warnings)
		}
	}
	if strings.Contains(found[stewardv1.ReceiptWarningKind_RECEIPT_WARNING_KIND_ACTION_NOT_ENDED], wire.ActionId) {
		t.Errorf("the waiting wire is told twice: %v", r.Warnings)
	}
	if r.AgentReportRound != 1 || r.AgentReport.GetSummary() != report.Summary || r.AgentReport.Steps[0].ActionIds[0] != search.ActionId {
		t.Errorf("the agent's report on the receipt: round %d, %v", r.AgentReportRound, r.AgentReport)
	}

	md, _ := newPerson(t, h.url, agentToken).run(0, "receipt", "--task", taskID)
	warnings, calls := strings.Index(md, "## Warnings"), strings.Index(md, "## Tool calls")
	if warnings < 0 || calls < warnings {
		t.Fatalf("the warnings are not near the top of the receipt:\n%s", md)
	}
	for _, want := range []string{"| unknown outcome | `" + charge.ActionId + "` |", "| check failed | `has-summary` | failed in round 1",
		"## The agent's account (its own words, not verified)", "**The agent's summary:** All incidents are summarised.", "the pager export was not read"} {
		if !strings.Contains(md, want) {
			t.Errorf("steward receipt lacks %q:\n%s", want, md)
		}
	}
	if strings.Contains(md[:strings.Index(md, "## The agent's account")], "All incidents are summarised") {
		t.Errorf("the agent's claim appears outside its labelled section:\n%s", md)
	}
	js, _ := newPerson(t, h.url, agentToken).run(0, "receipt", "--task", taskID, "--format", "json")
	if !strings.Contains(js, `"RECEIPT_WARNING_KIND_UNKNOWN_OUTCOME"`) || !strings.Contains(js, `"agentReport"`) {
		t.Errorf("steward receipt --format json lacks the typed warnings or the report:\n%s", js)
	}
}
