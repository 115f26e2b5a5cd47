package e2e_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/chromedp/chromedp"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/stewardtest"
)

// consolePlan is a plan of five steps whose states differ once it has
// run as far as it can: two searches succeed, a sub-task runs, a
// checkpoint asks its question, and a last search waits for both.
func consolePlan(t *testing.T) *stewardv1.Plan {
	t.Helper()
	search := func(q string) *stewardv1.Step_Action {
		params, err := structpb.NewStruct(map[string]any{"q": q})
		if err != nil {
			t.Fatal(err)
		}
		return &stewardv1.Step_Action{Action: &stewardv1.ActionStep{Tool: "search", Target: "index:incidents", Params: params}}
	}
	sub := contract()
	sub.Intent, sub.Budget = "Collect last week's pager alerts", &stewardv1.Budget{MaxTokens: 10_000}
	return &stewardv1.Plan{Version: 1, Ending: stewardv1.PlanEnding_PLAN_ENDING_PRODUCE, Steps: []*stewardv1.Step{
		{Id: "find", Kind: search("incidents")},
		{Id: "dig", DependsOn: []string{"find"}, Kind: search("postmortems")},
		{Id: "alerts", DependsOn: []string{"find"}, Kind: &stewardv1.Step_SubTask{SubTask: &stewardv1.SubTaskStep{Contract: sub, DelegateRef: "agent:researcher"}}},
		{Id: "ask", DependsOn: []string{"dig"}, Kind: &stewardv1.Step_Checkpoint{Checkpoint: &stewardv1.CheckpointStep{Question: "Publish the summary to the team?", Choices: []string{"yes", "no"}}}},
		{Id: "report", DependsOn: []string{"ask", "alerts"}, Kind: search("summary")},
	}}
}

// TestConsoleTaskPage drives a task's page in headless Chromium against
// the real binary: the plan is drawn as a graph whose steps show their
// states; the sub-task its step delegated hangs in the tree (ListTasks'
// parent_task_id); the decision and its context item, the budget bars,
// the timeline and the receipt are there; the checkpoint's question is
// answered from the page, and the graph shows the step succeed without a
// reload. axe-core finds no serious or critical issue.
func TestConsoleTaskPage(t *testing.T) {
	tool := stewardtest.StartTool(t)
	h := startSteward(t, setup{tools: governedTools(tool)})
	ctx := context.Background()
	b := browser(t)
	taskID := h.create(t, "console-plan", contract())
	if _, err := h.agent.tasks.AttachContext(ctx, connect.NewRequest(&stewardv1.AttachContextRequest{TaskId: taskID, Item: &stewardv1.ContextItem{
		ContextId: "runbook", Uri: "https://wiki.example/runbook", Digest: "sha256:aa", Source: "wiki",
		FetchedAt: timestamppb.New(time.Now().Add(-time.Minute)), Egress: []string{"*"}}})); err != nil {
		t.Fatal(err)
	}
	if _, err := h.agent.tasks.RecordDecision(ctx, connect.NewRequest(&stewardv1.RecordDecisionRequest{TaskId: taskID, Decision: &stewardv1.Decision{
		DecisionId: "plan-1", ContextIds: []string{"runbook"}, Rationale: "the runbook asks for a summary before the review",
		Call:     &stewardv1.ModelCall{Provider: "openai", ModelId: "gpt-a", TokensIn: 1000, TokensOut: 200},
		Versions: &stewardv1.VersionSnapshot{PromptTemplateId: "plan", PromptVersion: "2", CodeVersion: "agent@1.0"},
		LedTo:    &stewardv1.Decision_PlanVersion{PlanVersion: 1}}})); err != nil {
		t.Fatal(err)
	}
	if _, err := h.agent.tasks.SubmitPlan(ctx, connect.NewRequest(&stewardv1.SubmitPlanRequest{TaskId: taskID, Plan: consolePlan(t), RequestId: "plan-1"})); err != nil {
		t.Fatal(err)
	}
	tk := waitServed(t, h.agent.clients, taskID, time.Minute, func(tk *stewardv1.Task) (bool, string) {
		return tk.OpenInput != nil && subTaskID(tk, "alerts") != "", fmt.Sprintf("%v, plan %v", tk.Status, tk.Plan.GetSteps())
	})
	child := subTaskID(tk, "alerts")

	ops := openConsole(t, b, h.url, operatorToken)
	ops.goTo("#/task/" + taskID)
	step := func(id, status string) string {
		return fmt.Sprintf(`!!document.querySelector('svg.plan-graph g[data-step-id=%q][data-status=%q]')`, id, status)
	}
	for _, c := range []string{step("find", "STEP_STATUS_SUCCEEDED"), step("dig", "STEP_STATUS_SUCCEEDED"), step("alerts", "STEP_STATUS_RUNNING"),
		step("ask", "STEP_STATUS_RUNNING"), step("report", "STEP_STATUS_PENDING"), `document.querySelectorAll('svg.plan-graph path.edge').length === 5`,
		fmt.Sprintf(`!!document.querySelector('#subtasks ul.tree a[href="#/task/%s"]')`, child),
		`document.querySelector('#decisions').innerText.includes('the runbook asks for a summary') && document.querySelector('#decisions').innerText.includes('https://wiki.example/runbook')`,
		// 10,000 tokens reserved for the sub-task and the decision's 1,200, of 50,000.
		`document.querySelector('#budgets [role="progressbar"]').getAttribute('aria-valuenow') === '22'`,
		`document.querySelector('#timeline').innerText.includes('plan')`,
		`document.querySelector('#receipt').innerText.includes('Summarise last week')`,
		`!!document.querySelector('[data-live="on"]')`,
	} {
		ops.until(c)
	}
	ops.accessible("the task page with a plan")
	ops.screenshot("#plan", "plan")

	ops.do(setValue("form.answer", "select", "yes"))
	ops.press("form.answer", `button[type="submit"]`)
	ops.until(step("ask", "STEP_STATUS_SUCCEEDED"))
	ops.until(`!document.querySelector('form.answer')`)
}

// subTaskID is the sub-task the plan step id delegated, once it has.
func subTaskID(tk *stewardv1.Task, id string) string {
	for _, s := range tk.GetPlan().GetSteps() {
		if s.StepId == id {
			return s.SubTaskId
		}
	}
	return ""
}

// TestConsoleListsAndSettles: the tasks list pages with ListTasks' page
// token (one task a page here) through every task once, and its filters
// narrow it as the server does; an operator settles, from the inbox, an
// outcome nobody knows (a tool that never answered), and the action ends
// as the operator said. axe-core finds no serious or critical issue on
// the list or the inbox.
func TestConsoleListsAndSettles(t *testing.T) {
	tool := stewardtest.StartTool(t).Always("/slow", stewardtest.Silent)
	h := startSteward(t, setup{tools: []string{fmt.Sprintf(`{"name": "slow", "version": "1.0.0", "effectClass": "EFFECT_CLASS_IDEMPOTENT_WRITE",
	   "dataSensitivity": "DATA_SENSITIVITY_PUBLIC", "timeout": "1s", "http": {"url": %q}}`, tool.URL+"/slow")}})
	b := browser(t)
	k := contract()
	k.AllowedTools = []string{"slow"}
	k.Intent = "Charge the card once"
	slow := h.create(t, "console-slow", k)
	quiet := h.create(t, "console-quiet", contract())
	high := contract()
	high.RiskTier, high.Intent = stewardv1.RiskTier_RISK_TIER_HIGH, "Rotate the signing keys"
	risky := h.create(t, "console-risky", high)
	params, _ := structpb.NewStruct(nil)
	resp, err := h.agent.tasks.ProposeAction(context.Background(), connect.NewRequest(&stewardv1.ProposeActionRequest{
		TaskId: slow, ProposalId: "slow-1", Tool: "slow", Target: "card:1", Params: params}))
	if err != nil {
		t.Fatal(err)
	}
	charge := resp.Msg.Action
	waitAction(t, h.agent.clients, slow, charge.ActionId, stewardv1.ActionStatus_ACTION_STATUS_UNKNOWN)

	ops := openConsole(t, b, h.url, operatorToken)
	ops.goTo("#/tasks?size=1")
	var listed []string
	for {
		ops.until(`document.querySelectorAll('tr[data-task-id]').length === 1`)
		listed = append(listed, eval[string](ops, `document.querySelector('tr[data-task-id]').dataset.taskId`))
		if !eval[bool](ops, `!!document.querySelector('a[rel="next"]')`) {
			break
		}
		ops.do(chromedp.Click(chromedp.CSS(`a[rel="next"]`)))
		ops.until(fmt.Sprintf(`!document.querySelector('tr[data-task-id=%q]')`, listed[len(listed)-1]))
	}
	if want := fmt.Sprint([]string{slow, quiet, risky}); fmt.Sprint(listed) != want {
		t.Fatalf("the list paged through %v, want %s", listed, want)
	}
	ops.goTo("#/tasks")
	ops.until(`document.querySelectorAll('tr[data-task-id]').length === 3`)
	ops.accessible("the tasks list")
	ops.do(chromedp.SetValue(chromedp.CSS("#f-risk"), "HIGH"))
	ops.do(chromedp.Click(chromedp.CSS(`form.filters button[type="submit"]`)))
	ops.until(fmt.Sprintf(`document.querySelectorAll('tr[data-task-id]').length === 1 && !!document.querySelector('tr[data-task-id=%q]')`, risky))
	ops.goTo("#/tasks?text=CARD")
	ops.until(fmt.Sprintf(`document.querySelectorAll('tr[data-task-id]').length === 1 && !!document.querySelector('tr[data-task-id=%q]')`, slow))

	ops.goTo("#/inbox")
	form := sel("data-settle", charge.ActionId)
	ops.until(fmt.Sprintf(`!!document.querySelector('form%s')`, form))
	ops.accessible("the inbox with an outcome to settle")
	ops.do(setValue("form"+form, "select", "SETTLE_STATE_FAILED"))
	ops.do(setValue("form"+form, "input[required]", "the card was not charged: the ledger has no entry"))
	ops.press("form"+form, `button[type="submit"]`)
	_, settled := waitAction(t, h.agent.clients, slow, charge.ActionId, stewardv1.ActionStatus_ACTION_STATUS_FAILED)
	if settled.SettledBy != "user:ops" || settled.Outcome.GetReason() == "" {
		t.Fatalf("the settled action: %v", settled)
	}
	// Settled, it stays where it was, greyed, until the operator asks for the latest.
	ops.until(fmt.Sprintf(`!!document.querySelector('.gone form%s')`, form))
	ops.press("#unknown", "[data-show-latest]")
	ops.until(fmt.Sprintf(`!document.querySelector('form%s') && document.getElementById('unknown-h').textContent === 'Outcomes to settle (0)'`, form))

	// A token the server stops accepting mid-session ends it: the inbox's
	// next refresh goes back to sign-in and the token is forgotten.
	eval[bool](ops, `sessionStorage.setItem('steward.token', 'revoked'), true`)
	ops.until(`(document.querySelector('form.signin') || {}).textContent?.includes('no longer accepted') && sessionStorage.getItem('steward.token') === null`)
}
