package e2e_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/durationpb"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/stewardtest"
)

// TestDeclaredFallbackEndToEnd runs the binary (built with the test clock,
// so that the way back is a move of the clock, not a wait): a task whose
// primary tool fails transiently (503, no retry) engages its declared
// fallback at the next proposal, which runs on the fallback tool and
// succeeds; the receipt (`steward receipt`) and `steward tasks show`
// show the engagement; once
// the clock passes retry_primary_after the next proposal runs on the
// primary again, and the receipt shows the fallback cleared.
func TestDeclaredFallbackEndToEnd(t *testing.T) {
	tool := stewardtest.StartTool(t).Script("/flaky", stewardtest.Fail(http.StatusServiceUnavailable))
	const once = `"retryPolicy": {"maxAttempts": 1}`
	tools := fmt.Sprintf(`{"tools": [
	  {"name": "flaky", "version": "1", "effectClass": "EFFECT_CLASS_READ", "dataSensitivity": "DATA_SENSITIVITY_INTERNAL", "http": {"url": %q}, %s},
	  {"name": "mirror", "version": "1", "effectClass": "EFFECT_CLASS_READ", "dataSensitivity": "DATA_SENSITIVITY_INTERNAL", "http": {"url": %q}, %s}]}`,
		tool.URL+"/flaky", once, tool.URL+"/mirror", once)
	at := time.Now().UTC()
	c := startClocked(t, at, "--tools", writeFile(t, t.TempDir(), "tools.json", tools))
	ctx := context.Background()

	k := contract()
	k.AllowedTools = []string{"flaky", "mirror"}
	k.Fallbacks = []*stewardv1.Fallback{{Id: "mirror-on-503", Kind: stewardv1.FallbackKind_FALLBACK_KIND_TOOL, Primary: "flaky", Fallback: "mirror",
		Trigger:           &stewardv1.FallbackTrigger{FailureClasses: []stewardv1.FailureClass{stewardv1.FailureClass_FAILURE_CLASS_TRANSIENT}},
		RetryPrimaryAfter: durationpb.New(time.Minute)}}
	resp, err := c.tasks.CreateTask(ctx, connect.NewRequest(&stewardv1.CreateTaskRequest{RequestId: "fallback", Contract: k}))
	if err != nil {
		t.Fatal(err)
	}
	taskID := resp.Msg.Task.Contract.TaskId
	waitStarted(t, c.clients, taskID)
	propose := func(id string) *stewardv1.Action {
		t.Helper()
		a, err := c.tasks.ProposeAction(ctx, connect.NewRequest(&stewardv1.ProposeActionRequest{TaskId: taskID, ProposalId: id, Tool: "flaky", Target: "x", Rationale: argued}))
		if err != nil {
			t.Fatal(err)
		}
		return a.Msg.Action
	}

	first := propose("p1")
	if _, a := waitAction(t, c.clients, taskID, first.ActionId, stewardv1.ActionStatus_ACTION_STATUS_FAILED); a.Outcome.FailureClass != stewardv1.FailureClass_FAILURE_CLASS_TRANSIENT {
		t.Fatalf("the primary's call failed %s, want transient", a.Outcome.FailureClass)
	}
	second := propose("p2")
	if second.Tool != "mirror" || second.FallbackOf != "flaky" || second.FallbackId != "mirror-on-503" {
		t.Fatalf("the next proposal ran on %s (fallback_of %q); want mirror in flaky's place", second.Tool, second.FallbackOf)
	}
	waitAction(t, c.clients, taskID, second.ActionId, stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED)
	if n := tool.CallsTo("/mirror"); n != 1 {
		t.Fatalf("the fallback tool got %d calls, want 1", n)
	}
	receipt := func() string {
		t.Helper()
		return run(t, 0, "receipt", "--task", taskID, "--addr", c.p.url)
	}
	if md := receipt(); !strings.Contains(md, "## Fallbacks") || !strings.Contains(md, "flaky → mirror") ||
		!strings.Contains(md, "action "+first.ActionId+" failed transient") || !strings.Contains(md, "still engaged") {
		t.Fatalf("the receipt does not show the engagement:\n%s", md)
	}

	if out := run(t, 0, "tasks", "show", taskID, "--addr", c.p.url); !strings.Contains(out, "mirror-on-503 engaged (mirror in place of flaky)") ||
		!strings.Contains(out, "mirror (for flaky)") {
		t.Fatalf("tasks show does not show the engaged fallback:\n%s", out)
	}

	c.set(at.Add(2 * time.Minute)) // past retry_primary_after
	third := propose("p3")
	if third.Tool != "flaky" || third.FallbackOf != "" {
		t.Fatalf("after the duration the proposal ran on %s; want the primary", third.Tool)
	}
	waitAction(t, c.clients, taskID, third.ActionId, stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED) // the tool answers 200 now
	if md := receipt(); !strings.Contains(md, "its time on the fallback ran out") || strings.Contains(md, "still engaged") {
		t.Fatalf("the receipt does not show the fallback cleared:\n%s", md)
	}
}

// TestConsoleReceiptShowsFallbacks: the console's receipt draws a model
// fallback's engagement and an undeclared model swap from the structured
// receipt; axe-core finds no serious or critical issue.
func TestConsoleReceiptShowsFallbacks(t *testing.T) {
	h := startSteward(t, setup{})
	ctx := context.Background()
	b := browser(t)
	k := contract()
	k.Fallbacks = []*stewardv1.Fallback{{Id: "smaller-model", Kind: stewardv1.FallbackKind_FALLBACK_KIND_MODEL, Primary: "gpt-a", Fallback: "gpt-b"}}
	taskID := h.create(t, "console-fallback", k)
	for i, model := range []string{"gpt-a", "gpt-b", "claude-x"} {
		if _, err := h.agent.tasks.RecordDecision(ctx, connect.NewRequest(&stewardv1.RecordDecisionRequest{TaskId: taskID, Decision: &stewardv1.Decision{
			DecisionId: fmt.Sprintf("d%d", i+1), Rationale: "the next step", Call: &stewardv1.ModelCall{Provider: "p", ModelId: model, TokensIn: 10},
			LedTo: &stewardv1.Decision_NoAction{NoAction: &stewardv1.NoAction{}}}})); err != nil {
			t.Fatal(err)
		}
	}
	ops := openConsole(t, b, h.url, operatorToken)
	ops.goTo("#/task/" + taskID)
	for _, c := range []string{
		`(document.querySelector('#receipt')?.innerText || '').includes('gpt-a → gpt-b')`,
		// Captions of the tables drawn from the structured receipt, not its Markdown.
		`[...document.querySelectorAll('#receipt caption')].map((c) => c.textContent).join('|') === 'Fallbacks|Undeclared model swaps'`,
		`(document.querySelector('#receipt')?.innerText || '').includes('claude-x')`,
	} {
		ops.until(c)
	}
	ops.accessible("the receipt with fallbacks")
}
