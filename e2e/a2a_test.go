package e2e_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/a2aproject/a2a-go/a2a"
	"github.com/a2aproject/a2a-go/a2aclient"
	"github.com/a2aproject/a2a-go/a2aclient/agentcard"

	"github.com/steward-run/steward/cmd/steward/app"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/stewardtest"
)

// a2aSkills is the skills file the A2A tests serve.
const a2aSkills = "testdata/a2a-skills.json"

// bearerTransport presents a token on every request, as an A2A client
// configured with the card's bearer scheme does.
type bearerTransport string

func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+string(b))
	return http.DefaultTransport.RoundTrip(r)
}

// a2aClient is a2a-go's client, from the served card, presenting token.
func a2aClient(t *testing.T, url, token string) *a2aclient.Client {
	t.Helper()
	ctx := context.Background()
	card, err := agentcard.DefaultResolver.Resolve(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	c, err := a2aclient.NewFromCard(ctx, card, a2aclient.WithJSONRPCTransport(&http.Client{Transport: bearerTransport(token)}))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func textMessage(id, text string) *a2a.Message {
	return &a2a.Message{ID: id, Role: a2a.MessageRoleUser, Parts: a2a.ContentParts{a2a.TextPart{Text: text}}}
}

// TestA2AWithGoClient drives a task from an A2A client (a2a-go) while its
// agent works it over the Connect API: the card names the skills and the
// bearer scheme; message/send opens a task delegated to the skill's agent,
// under the skill's contract, with the caller as requester; the agent's
// question is input-required with the question as the status message; a
// message to the task answers it; the artifact is read back; a task
// cancelled is canceled and cannot be cancelled again.
func TestA2AWithGoClient(t *testing.T) {
	h := startSteward(t, setup{inProcess: true, flags: []string{"--a2a-skills", a2aSkills}})
	ctx := context.Background()
	card, err := agentcard.DefaultResolver.Resolve(ctx, h.url)
	if err != nil {
		t.Fatal(err)
	}
	if card.ProtocolVersion != "0.3.0" || len(card.Skills) != 2 || card.Skills[0].ID != "summarise" || !card.Capabilities.Streaming ||
		card.URL != h.url+"/a2a" || len(card.Security) != 1 || card.SecuritySchemes["bearer"] == nil {
		t.Fatalf("card: %+v", card)
	}
	client := a2aClient(t, h.url, ownerToken)

	sent, err := client.SendMessage(ctx, &a2a.MessageSendParams{Message: textMessage("m-open-1", "Last week's incidents, please"), Metadata: map[string]any{"skill": "summarise"}})
	if err != nil {
		t.Fatal(err)
	}
	opened, ok := sent.(*a2a.Task)
	if !ok || opened.ID == "" || opened.ContextID == "" || opened.ContextID == string(opened.ID) || opened.Status.State.Terminal() {
		t.Fatalf("message/send: %+v", sent)
	}
	taskID := string(opened.ID)
	// The task is a sub-task of the context, worked by the skill's agent
	// under the skill's contract, the caller its requester.
	tk := waitServed(t, h.agent.clients, taskID, 10*time.Second, func(tk *stewardv1.Task) (bool, string) {
		return tk.Status == stewardv1.TaskStatus_TASK_STATUS_RUNNING && tk.Credential != nil, tk.Status.String()
	})
	k := tk.Contract
	if k.ParentTaskId != opened.ContextID || k.RequesterRef != "user:owner" || len(k.AcceptanceCriteria) != 1 ||
		!strings.HasPrefix(k.Intent, "Summarise incidents for the on-call review") || !strings.Contains(k.Intent, "Last week's incidents, please") ||
		tk.Credential.GetCredential().GetPrincipal() != "agent:summariser" {
		t.Fatalf("the task: %+v, credential %+v", k, tk.Credential.GetCredential())
	}

	// The agent asks; the A2A client sees input-required and the question.
	question := "Which region?"
	if _, err := h.agent.tasks.RequestInput(ctx, connect.NewRequest(&stewardv1.RequestInputRequest{TaskId: taskID, Question: question, RequestId: "ask-1"})); err != nil {
		t.Fatal(err)
	}
	got, err := client.GetTask(ctx, &a2a.TaskQueryParams{ID: opened.ID})
	if err != nil {
		t.Fatal(err)
	}
	if got.Status.State != a2a.TaskStateInputRequired || got.Status.Message == nil || got.Status.Message.Parts[0].(a2a.TextPart).Text != question {
		t.Fatalf("tasks/get while asked: %+v", got.Status)
	}
	// A message to the task answers it.
	answered, err := client.SendMessage(ctx, &a2a.MessageSendParams{Message: &a2a.Message{ID: "m-answer-1", Role: a2a.MessageRoleUser, TaskID: opened.ID, Parts: a2a.ContentParts{a2a.TextPart{Text: "EU"}}}})
	if err != nil {
		t.Fatal(err)
	}
	if at := answered.(*a2a.Task); at.Status.State != a2a.TaskStateWorking {
		t.Fatalf("after the answer: %+v", at.Status)
	}
	tk = waitServed(t, h.agent.clients, taskID, 10*time.Second, func(tk *stewardv1.Task) (bool, string) { return tk.OpenInput == nil, "still asking" })

	// The agent produces; the checks pass, so it is completed.
	summary := "# Incidents\n\nThree, all in the EU.\n"
	if _, err := h.agent.tasks.SubmitArtifact(ctx, connect.NewRequest(&stewardv1.SubmitArtifactRequest{TaskId: taskID, Name: "summary.md", MediaType: "text/markdown", Content: []byte(summary)})); err != nil {
		t.Fatal(err)
	}
	if _, err := h.agent.tasks.MarkProduced(ctx, connect.NewRequest(&stewardv1.MarkProducedRequest{TaskId: taskID})); err != nil {
		t.Fatal(err)
	}
	var done *a2a.Task
	stewardtest.Eventually(t, 10*time.Second, func() (bool, string) {
		done, err = client.GetTask(ctx, &a2a.TaskQueryParams{ID: opened.ID})
		return err == nil && done.Status.State == a2a.TaskStateCompleted, "not completed"
	})
	if len(done.Artifacts) != 1 || done.Artifacts[0].Name != "summary.md" || done.Artifacts[0].Parts[0].(a2a.TextPart).Text != summary {
		t.Fatalf("artifacts: %+v", done.Artifacts)
	}
	// The context task, which handed the skill's budget on, is not
	// suspended for having spent it: it holds none of its own.
	holder, err := h.owner.query.GetTask(ctx, connect.NewRequest(&stewardv1.GetTaskRequest{TaskId: opened.ContextID}))
	if err != nil {
		t.Fatal(err)
	}
	if holder.Msg.Task.Status != stewardv1.TaskStatus_TASK_STATUS_RUNNING || holder.Msg.Task.Contract.Budget != nil {
		t.Fatalf("the context task: %s (%s), budget %v", holder.Msg.Task.Status, holder.Msg.Task.StatusReason, holder.Msg.Task.Contract.Budget)
	}
	// A viewer may read the task, not its content: the artifact is there,
	// its bytes are not. Another tenant's caller does not find the task.
	viewed, err := a2aClient(t, h.url, viewerToken).GetTask(ctx, &a2a.TaskQueryParams{ID: opened.ID})
	if err != nil {
		t.Fatal(err)
	}
	if hidden, ok := viewed.Artifacts[0].Parts[0].(a2a.DataPart); !ok || !strings.HasPrefix(hidden.Data["content"].(string), "hidden") || strings.Contains(fmt.Sprint(viewed.Artifacts), "Three") {
		t.Fatalf("the viewer's artifacts: %+v", viewed.Artifacts[0])
	}
	other := a2aClient(t, h.url, globexAdminToken)
	if _, err := other.GetTask(ctx, &a2a.TaskQueryParams{ID: opened.ID}); !errors.Is(err, a2a.ErrTaskNotFound) {
		t.Fatalf("another tenant's tasks/get: %v, want task not found", err)
	}

	// A context holds one task: another message to it opens none.
	_, err = client.SendMessage(ctx, &a2a.MessageSendParams{Message: &a2a.Message{ID: "m-open-2", Role: a2a.MessageRoleUser, ContextID: opened.ContextID,
		Parts: a2a.ContentParts{a2a.TextPart{Text: "Is this alert mine?"}}}, Metadata: map[string]any{"skill": "triage"}})
	if !errors.Is(err, a2a.ErrInvalidParams) || !strings.Contains(err.Error(), "message.contextId") {
		t.Fatalf("a second task in a context: %v, want invalid params naming message.contextId", err)
	}
	// A task in a new context, cancelled before its agent is done: a
	// message/send that does not block answers at once.
	noWait := false
	sent, err = client.SendMessage(ctx, &a2a.MessageSendParams{Message: textMessage("m-open-3", "Is this alert mine?"),
		Metadata: map[string]any{"skill": "triage"}, Config: &a2a.MessageSendConfig{Blocking: &noWait}})
	if err != nil {
		t.Fatal(err)
	}
	second := sent.(*a2a.Task)
	if second.ContextID == opened.ContextID || second.Status.State.Terminal() {
		t.Fatalf("a task in a new context: %+v", second)
	}
	cancelled, err := client.CancelTask(ctx, &a2a.TaskIDParams{ID: second.ID})
	if err != nil {
		t.Fatal(err)
	}
	if cancelled.Status.State != a2a.TaskStateCanceled {
		t.Fatalf("tasks/cancel: %+v", cancelled.Status)
	}
	if _, err := client.CancelTask(ctx, &a2a.TaskIDParams{ID: second.ID}); !errors.Is(err, a2a.ErrTaskNotCancelable) {
		t.Fatalf("cancelling a cancelled task: %v, want not cancelable", err)
	}
}

// rpcAnswer is a JSON-RPC answer as the wire has it.
type rpcAnswer struct {
	status int
	ID     json.RawMessage `json:"id"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int            `json:"code"`
		Message string         `json:"message"`
		Data    map[string]any `json:"data"`
	} `json:"error"`
}

func postRPC(t *testing.T, url, token, body string) rpcAnswer {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url+"/a2a", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	a := rpcAnswer{status: resp.StatusCode}
	if err := json.NewDecoder(resp.Body).Decode(&a); err != nil {
		t.Fatalf("%s: %d, not JSON: %v", body, resp.StatusCode, err)
	}
	return a
}

// TestA2ARefusals sends what the endpoint must refuse, raw: each gets the
// JSON-RPC or A2A error code the spec gives it, bad params name the field,
// and a caller without a token gets a 401.
func TestA2ARefusals(t *testing.T) {
	h := startSteward(t, setup{inProcess: true, flags: []string{"--a2a-skills", a2aSkills}})
	send := func(message string, extra string) string {
		return `{"jsonrpc":"2.0","id":7,"method":"message/send","params":{"message":` + message + extra + `}}`
	}
	text := `{"kind":"text","text":"hi"}`
	huge := `{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"id":"` + strings.Repeat("x", 1<<20) + `"}}`
	for _, tc := range []struct {
		name, token, body string
		status, code      int
		field             string
	}{
		{"no token", "", `{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"id":"t"}}`, 401, -32000, ""},
		{"a wrong token", "nobody-0123456789", `{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"id":"t"}}`, 401, -32000, ""},
		{"not JSON", ownerToken, `{"jsonrpc":`, 200, -32700, ""},
		{"JSON-RPC 1.0", ownerToken, `{"jsonrpc":"1.0","id":1,"method":"tasks/get"}`, 200, -32600, ""},
		{"a notification", ownerToken, `{"jsonrpc":"2.0","method":"tasks/get","params":{"id":"t"}}`, 200, -32600, ""},
		{"an unknown member", ownerToken, `{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"id":"t"},"extra":1}`, 200, -32600, ""},
		{"a batch", ownerToken, `[{"jsonrpc":"2.0","id":1,"method":"tasks/get"}]`, 200, -32600, ""},
		{"too large", ownerToken, huge, 200, -32600, ""},
		{"an unknown method", ownerToken, `{"jsonrpc":"2.0","id":1,"method":"tasks/list","params":{}}`, 200, -32601, ""},
		{"push notifications", ownerToken, `{"jsonrpc":"2.0","id":1,"method":"tasks/pushNotificationConfig/set","params":{}}`, 200, -32003, ""},
		{"the extended card", ownerToken, `{"jsonrpc":"2.0","id":1,"method":"agent/getAuthenticatedExtendedCard"}`, 200, -32007, ""},
		{"no params", ownerToken, `{"jsonrpc":"2.0","id":1,"method":"tasks/get"}`, 200, -32602, "params"},
		{"no task id", ownerToken, `{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{}}`, 200, -32602, "id"},
		{"an unknown task", ownerToken, `{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"id":"tsk-nope"}}`, 200, -32001, ""},
		{"no message id", ownerToken, send(`{"role":"user","parts":[`+text+`]}`, ""), 200, -32602, "message.messageId"},
		{"an agent's message", ownerToken, send(`{"messageId":"m1","role":"agent","parts":[`+text+`]}`, ""), 200, -32602, "message.role"},
		{"no parts", ownerToken, send(`{"messageId":"m1","role":"user","parts":[]}`, ""), 200, -32602, "message.parts"},
		{"a file part", ownerToken, send(`{"messageId":"m1","role":"user","parts":[`+text+`,{"kind":"file","file":{"uri":"https://x/y"}}]}`, ""), 200, -32602, "message.parts[1]"},
		{"no skill of two", ownerToken, send(`{"messageId":"m1","role":"user","parts":[`+text+`]}`, ""), 200, -32602, "metadata.skill"},
		{"an unknown skill", ownerToken, send(`{"messageId":"m1","role":"user","parts":[`+text+`]}`, `,"metadata":{"skill":"cook"}`), 200, -32602, "metadata.skill"},
		{"an answer to an unknown task", ownerToken, send(`{"messageId":"m1","role":"user","taskId":"tsk-nope","parts":[`+text+`]}`, ""), 200, -32001, "message.taskId"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := postRPC(t, h.url, tc.token, tc.body)
			if a.status != tc.status || a.Error == nil || a.Error.Code != tc.code || a.Result != nil {
				t.Fatalf("%d %+v, want %d and code %d", a.status, a.Error, tc.status, tc.code)
			}
			if tc.field != "" && a.Error.Data["field"] != tc.field {
				t.Fatalf("field %v (%s), want %s", a.Error.Data["field"], a.Error.Message, tc.field)
			}
		})
	}
	// The card is public and says how to authenticate.
	resp, err := http.Get(h.url + "/.well-known/agent-card.json")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var card bytes.Buffer
	_, _ = card.ReadFrom(resp.Body)
	if resp.StatusCode != 200 || !strings.Contains(card.String(), `"scheme":"Bearer"`) {
		t.Fatalf("card: %d %s", resp.StatusCode, card.String())
	}
}

// TestA2ACheckCLI checks a skills file with `steward a2a check`, the real
// binary and no server: the table lists each skill with its agent and
// contract, -o json gives the contract in the API's JSON, and a file
// --a2a-skills would refuse exits 1 naming the field.
func TestA2ACheckCLI(t *testing.T) {
	out, _ := runBinary(t, nil, 0, "a2a", "check", a2aSkills)
	if !strings.Contains(out, "SKILL") || !strings.Contains(out, "summarise  Summarise incidents  agent:summariser  low   50000") {
		t.Errorf("a2a check:\n%s", out)
	}
	out, _ = runBinary(t, nil, 0, "a2a", "check", "-o", "json", a2aSkills)
	var first struct {
		ID       string `json:"id"`
		Contract struct {
			RiskTier string `json:"riskTier"`
		} `json:"contract"`
	}
	if err := json.Unmarshal([]byte(strings.SplitN(out, "\n", 2)[0]), &first); err != nil || first.ID != "summarise" || first.Contract.RiskTier != "RISK_TIER_LOW" {
		t.Errorf("a2a check -o json: %v\n%s", err, out)
	}
	bad := writeFile(t, t.TempDir(), "skills.json", `{"skills": [{"id": "x", "name": "X"}]}`)
	if _, errs := runBinary(t, nil, 1, "a2a", "check", bad); !strings.Contains(errs, "skills[0].agent: is required") {
		t.Errorf("a skill without an agent: %s", errs)
	}
}

// TestA2AThroughTheGateway serves A2A from `steward gateway` in front of
// the planes, the real binaries: its calls go through the gateway to the
// planes as the caller, a stream follows a task to the agent's question
// (a2a-go's streaming client), and a caller without a token gets a 401.
func TestA2AThroughTheGateway(t *testing.T) {
	h := startSteward(t, setup{})
	args := []string{"gateway", "--addr", "127.0.0.1:0", "--log-level", "warn", "--a2a-skills", a2aSkills}
	for _, r := range app.PlaneRoutes() {
		args = append(args, "--"+r.Plane, h.url)
	}
	gw := startCommand(t, nil, args...)
	stewardtest.Eventually(t, 20*time.Second, func() (bool, string) {
		resp, err := http.Get(gw.url + "/readyz")
		if err != nil {
			return false, err.Error()
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, resp.Status
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	client := a2aClient(t, gw.url, ownerToken)
	var states []a2a.TaskState
	asked := false
	for ev, err := range client.SendStreamingMessage(ctx, &a2a.MessageSendParams{Message: textMessage("m-gw-1", "Through the gateway"), Metadata: map[string]any{"skill": "triage"}}) {
		if err != nil {
			t.Fatalf("after %q: %v", states, err)
		}
		switch ev := ev.(type) {
		case *a2a.Task:
			states = append(states, ev.Status.State)
		case *a2a.TaskStatusUpdateEvent:
			states = append(states, ev.Status.State)
			if ev.Final && words(ev.Status) != "Who?" {
				t.Fatalf("final status %+v, want the question", ev.Status)
			}
		}
		if id := ev.TaskInfo().TaskID; !asked {
			asked = true
			waitServed(t, h.agent.clients, string(id), 20*time.Second, func(tk *stewardv1.Task) (bool, string) {
				return tk.Status == stewardv1.TaskStatus_TASK_STATUS_RUNNING && tk.Credential != nil, tk.Status.String()
			})
			if _, err := h.agent.tasks.RequestInput(ctx, connect.NewRequest(&stewardv1.RequestInputRequest{TaskId: string(id), Question: "Who?", RequestId: "ask"})); err != nil {
				t.Fatal(err)
			}
		}
	}
	if states[len(states)-1] != a2a.TaskStateInputRequired {
		t.Fatalf("states %q, want the last input-required", states)
	}
	if a := postRPC(t, gw.url, "", `{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"id":"t"}}`); a.status != http.StatusUnauthorized {
		t.Fatalf("no token through the gateway: %d %+v", a.status, a.Error)
	}
}

// words is what a status message says.
func words(st a2a.TaskStatus) string {
	if st.Message == nil || len(st.Message.Parts) == 0 {
		return ""
	}
	p, _ := st.Message.Parts[0].(a2a.TextPart)
	return p.Text
}
