package e2e_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/structpb"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/stewardtest"
)

// modelToolJSON is an llm.chat tool over the fake model at url: 600
// tokens a call at the fake's default, priced 1,000 micros per 1,000
// tokens each way, three tries for what never reached it.
func modelToolJSON(url string) string {
	return fmt.Sprintf(`{"name": "llm", "version": "1", "effectClass": "EFFECT_CLASS_READ", "dataSensitivity": "DATA_SENSITIVITY_INTERNAL",
	  "timeout": "0.5s", "retryPolicy": {"maxAttempts": 3, "initialBackoff": "0.01s", "maxBackoff": "0.05s"},
	  "model": {"baseUrl": %q, "model": "gpt-test", "provider": "openai", "maxTokens": 200, "inputMicrosPer1k": 1000, "outputMicrosPer1k": 1000}}`, url)
}

// chat proposes a call of the llm tool saying text, citing context.
func chat(t *testing.T, who authed, taskID, proposalID, text string, context ...string) *stewardv1.Action {
	t.Helper()
	params := map[string]any{"messages": []any{map[string]any{"role": "user", "content": text}}, "decision_id": proposalID}
	if len(context) > 0 {
		ids := make([]any, len(context))
		for i, c := range context {
			ids[i] = c
		}
		params["context_ids"] = ids
	}
	ps, err := structpb.NewStruct(params)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := who.tasks.ProposeAction(t.Context(), connect.NewRequest(&stewardv1.ProposeActionRequest{TaskId: taskID, ProposalId: proposalID, Tool: "llm", Params: ps}))
	if err != nil {
		t.Fatal(err)
	}
	return resp.Msg.Action
}

// TestModelCallsEndToEnd runs llm.chat against the real binary and a fake
// model that counts what it is asked. A call citing context that may not
// go to the model's provider is denied before anything is sent; a call
// that timed out after it was sent ends unknown and is sent once; a
// rate-limited call is sent again and succeeds, counted apart from tools'
// failures; each call that answered records an observed decision and
// charges its tokens, and the task is suspended when they spend its
// budget, as any cost suspends it.
func TestModelCallsEndToEnd(t *testing.T) {
	var busyTries atomic.Int32
	fake := stewardtest.StartFakeModel(t, func(_ int, req stewardtest.FakeModelRequest) stewardtest.FakeReply {
		switch text := req.Messages[0]["content"]; {
		case text == "slow":
			return stewardtest.FakeReply{Hang: true}
		case text == "busy" && busyTries.Add(1) == 1:
			return stewardtest.FakeReply{Status: 429, ErrorCode: "rate_limit_exceeded"}
		}
		return stewardtest.FakeReply{Content: "done", PromptTokens: 400, CompletionTokens: 200, Model: "gpt-test-0613"}
	})
	h := startSteward(t, setup{tools: []string{modelToolJSON(fake.URL)}})
	ctx := context.Background()
	k := contract()
	k.AllowedTools = []string{"llm"}
	k.Budget = &stewardv1.Budget{MaxTokens: 1000}
	taskID := h.create(t, "models-e2e", k)
	for _, item := range []*stewardv1.ContextItem{
		{ContextId: "local-only", Uri: "https://wiki.example/internal", Digest: "sha256:aa", Egress: []string{"on-prem"}},
	} {
		if _, err := h.agent.tasks.AttachContext(ctx, connect.NewRequest(&stewardv1.AttachContextRequest{TaskId: taskID, Item: item})); err != nil {
			t.Fatal(err)
		}
	}

	// Context that may not go to openai: denied, nothing sent.
	held := chat(t, h.agent, taskID, "held", "summarise the internal page", "local-only")
	_, denied := waitAction(t, h.agent.clients, taskID, held.ActionId, stewardv1.ActionStatus_ACTION_STATUS_DENIED)
	if reasons := strings.Join(denied.GetSnapshot().GetReasons(), "; "); !strings.Contains(reasons, `context item "local-only" may not be sent to openai`) {
		t.Errorf("the denial says %q", reasons)
	}
	if n := fake.Requests(); n != 0 {
		t.Fatalf("the fake model took %d requests for a call that was denied", n)
	}

	// A timeout after sending: unknown, sent once.
	slow := chat(t, h.agent, taskID, "slow", "slow")
	waitAction(t, h.agent.clients, taskID, slow.ActionId, stewardv1.ActionStatus_ACTION_STATUS_UNKNOWN)
	if n := fake.Requests(); n != 1 {
		t.Fatalf("the call that timed out reached the model %d times, want once", n)
	}

	// A rate limit: sent again by its own rule, and succeeds.
	busy := chat(t, h.agent, taskID, "busy", "busy")
	_, done := waitAction(t, h.agent.clients, taskID, busy.ActionId, stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED)
	if n := fake.Requests(); n != 3 || done.Outcome.GetTokens() != 600 || done.Outcome.GetCostMicros() != 600 {
		t.Fatalf("after the rate-limited call: %d requests (want 3), tokens %d, cost %d", n, done.Outcome.GetTokens(), done.Outcome.GetCostMicros())
	}
	stewardtest.Eventually(t, 10*time.Second, func() (bool, string) {
		m := scrape(t, h.url)
		return m[`steward_model_call_failures_total{reason="rate_limited"}`] == 1 && m[`steward_model_call_failures_total{reason="timeout"}`] == 1 &&
			m[`steward_actions_failed{class="transient"}`] == 0, fmt.Sprintf("metrics %v", m)
	})

	// The observed decision; then a second call spends the budget.
	tk := waitServed(t, h.agent.clients, taskID, 10*time.Second, func(tk *stewardv1.Task) (bool, string) {
		return len(tk.Decisions) == 1, "no decision yet"
	})
	if d := tk.Decisions[0]; d.DecisionId != "busy" || d.Call.GetProvenance() != stewardv1.Provenance_PROVENANCE_OBSERVED ||
		d.Call.GetModelId() != "gpt-test-0613" || d.Call.GetTokensIn() != 400 || d.Call.GetTokensOut() != 200 || d.Call.GetCallId() == "" {
		t.Fatalf("the observed decision: %v", d)
	}
	if tk.BudgetUsed.GetTokens() != 600 {
		t.Fatalf("tokens used %d, want 600: charged once, by the outcome", tk.BudgetUsed.GetTokens())
	}
	more := chat(t, h.agent, taskID, "more", "hello")
	waitAction(t, h.agent.clients, taskID, more.ActionId, stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED)
	tk = waitStatus(t, h.agent.clients, taskID, stewardv1.TaskStatus_TASK_STATUS_SUSPENDED)
	if tk.SuspendedFor != stewardv1.SuspendCause_SUSPEND_CAUSE_BUDGET_SPENT || tk.BudgetUsed.GetTokens() != 1200 {
		t.Fatalf("after spending: %s for %s, %d tokens", tk.Status, tk.SuspendedFor, tk.BudgetUsed.GetTokens())
	}
}

// TestModelCallInFlightAtAKillIsNotSentAgain kills the binary (SIGKILL)
// while a model call is at the model, and starts it again on the same
// data: where a read in flight is sent again (lostread_test.go), a model
// call, a read that is paid, ends unknown, and the model is asked once.
func TestModelCallInFlightAtAKillIsNotSentAgain(t *testing.T) {
	fake := stewardtest.StartFakeModel(t, func(int, stewardtest.FakeModelRequest) stewardtest.FakeReply {
		return stewardtest.FakeReply{Hang: true}
	})
	tools := writeFile(t, t.TempDir(), "tools.json", `{"tools": [`+strings.Replace(modelToolJSON(fake.URL), `"timeout": "0.5s"`, `"timeout": "120s"`, 1)+`]}`)
	data := t.TempDir()
	p := startBinary(t, data, "--tools", tools)
	c := newClients(p.url)
	k := contract()
	k.AllowedTools = []string{"llm"}
	resp, err := c.tasks.CreateTask(t.Context(), connect.NewRequest(&stewardv1.CreateTaskRequest{RequestId: "lost-model-call", Contract: k}))
	if err != nil {
		t.Fatal(err)
	}
	taskID := resp.Msg.Task.Contract.TaskId
	waitStarted(t, c, taskID)
	a := chat(t, authed{clients: c}, taskID, "asked-once", "hello")
	stewardtest.Eventually(t, 15*time.Second, func() (bool, string) {
		return fake.Requests() == 1, fmt.Sprintf("%d requests reached the model", fake.Requests())
	})
	p.kill()

	p = startBinary(t, data, "--tools", tools)
	c = newClients(p.url)
	_, got := waitAction(t, c, taskID, a.ActionId, stewardv1.ActionStatus_ACTION_STATUS_UNKNOWN)
	if n := fake.Requests(); n != 1 || got.Attempt != 1 {
		t.Fatalf("after the kill: the model was asked %d times, the action is at attempt %d; want once, attempt 1", n, got.Attempt)
	}
}

// TestAgentKilledMidRunAsksEachDecisionOnce runs the scripted agent
// (agent_test.go), a process of its own, through five decisions, each a
// model call: it is killed (SIGKILL) while the model holds its third, and
// started again with its working directory wiped. It reads its decisions
// back and goes on: the fake model is asked at most once per decision id
// across the restart, and the receipt shows the decision trail, every
// version field, and whether each was observed or reported.
func TestAgentKilledMidRunAsksEachDecisionOnce(t *testing.T) {
	release := make(chan struct{})
	fake := stewardtest.StartFakeModel(t, func(_ int, req stewardtest.FakeModelRequest) stewardtest.FakeReply {
		if req.Messages[0]["content"] == "step-3" {
			<-release
		}
		return stewardtest.FakeReply{Content: "answer to " + req.Messages[0]["content"], PromptTokens: 30, CompletionTokens: 10, Model: "gpt-test-0613"}
	})
	tool := strings.Replace(modelToolJSON(fake.URL), `"timeout": "0.5s"`, `"timeout": "60s"`, 1)
	h := startSteward(t, setup{tools: []string{tool}})
	k := contract()
	k.AllowedTools = []string{"llm"}
	taskID := h.create(t, "killed-agent", k)
	dir := filepath.Join(t.TempDir(), "work")
	start := func() *exec.Cmd {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), agentEnvURL+"="+h.url, agentEnvTask+"="+taskID, agentEnvDir+"="+dir, agentEnvSteps+"=5")
		cmd.Stdout, cmd.Stderr = &testWriter{tb: t}, &testWriter{tb: t}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		return cmd
	}
	first := start()
	stewardtest.Eventually(t, 30*time.Second, func() (bool, string) {
		return fake.Requests() == 3, fmt.Sprintf("the model has %d requests", fake.Requests())
	})
	_ = first.Process.Kill()
	_ = first.Wait()
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	close(release)
	again := start()
	if err := again.Wait(); err != nil {
		t.Fatalf("the restarted agent: %v", err)
	}

	perDecision := map[string]int{}
	for _, req := range fake.Asked() {
		perDecision[req.Messages[0]["content"]]++
	}
	for i := 1; i <= 5; i++ {
		if n := perDecision[fmt.Sprintf("step-%d", i)]; n != 1 {
			t.Errorf("decision step-%d asked the model %d times, want once", i, n)
		}
	}
	if n := fake.Requests(); n != 5 {
		t.Errorf("the model took %d requests for 5 decisions", n)
	}
	receipt, err := h.agent.query.GetReceipt(t.Context(), connect.NewRequest(&stewardv1.GetReceiptRequest{TaskId: taskID}))
	if err != nil {
		t.Fatal(err)
	}
	r, md := receipt.Msg.Receipt, receipt.Msg.Markdown
	if len(r.Decisions) != 6 {
		t.Fatalf("the receipt has %d decisions, want the plan and 5 steps:\n%s", len(r.Decisions), md)
	}
	for _, want := range []string{"`plan` | `openai/gpt-plan` (reported)", "`step-1` | `openai/gpt-test-0613` (observed)", "`step-5` | `openai/gpt-test-0613` (observed)",
		"`step@v2`", "`plan@v1`", "`agent@1.0`", "`default`", "| reported |", "30 in, 10 out", "`brief`",
		"**Changed at `step-1`:** model `gpt-plan` → `gpt-test-0613`"} {
		if !strings.Contains(md, want) {
			t.Errorf("the receipt does not say %q:\n%s", want, md)
		}
	}
}
