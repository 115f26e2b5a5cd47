package e2e_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/stewardtest"
)

// What the task's lookup answers and what a person answers its
// checkpoint: content, which a caller who may not read the task's content
// must find in no answer of any read RPC.
const (
	lookedUp   = `{"approved":true,"token":"R3SULT-looked-up-7f3a"}`
	lookupMark = "R3SULT-looked-up-7f3a"
	answerMark = "ANSW3R-checkpoint-c0de"
)

// everywherePlan looks something up, stashes what it found (a parameter
// computed from the lookup's result), asks a person (a checkpoint, whose
// answer is its result), then fails a step with on_failure compensate: the
// stash is undone by an irreversible unstash, proposed by Steward with the
// stash's parameters and result in its request, which an authorizer
// approves.
const everywherePlan = `{"taskId": %q, "requestId": "everywhere-plan", "plan": {
  "version": 1, "ending": "PLAN_ENDING_PRODUCE",
  "steps": [
    {"id": "lookup", "action": {"tool": "lookup", "target": "crm", "params": {"q": "account"}}},
    {"id": "stash", "dependsOn": ["lookup"], "action": {"tool": "stash", "target": "vault", "paramExprs": {"note": "steps.lookup.result.token"}}},
    {"id": "ask", "dependsOn": ["stash"], "checkpoint": {"question": "Go on?"}},
    {"id": "boom", "dependsOn": ["ask"], "onFailure": "ON_FAILURE_COMPENSATE", "action": {"tool": "breaks", "target": "crm", "params": {"q": "x"}}}
  ]}}`

// TestResultsAreContentEverywhere: a principal of the tenant whom the task
// does not name and who holds no role walks every read RPC the generated
// descriptors declare (readRPCs) and finds none of a result's bytes — not
// in the compensation's request or its approval's parameters_json, not in
// the parameter a plan step computed from a result, not in a plan step's
// result or a checkpoint's answer — and none of the plain SHA-256 digests
// of the results, the artifact or the requests that quote a result: what
// it is shown in their place is keyed. Nor does a budget owner the task
// does not name, in the task RaiseBudget answers with. An authorizer the task does not
// name still reads the parameters of the approval it decides; the
// operator's walk finds the content, which shows that the walk would.
func TestResultsAreContentEverywhere(t *testing.T) {
	ctx := context.Background()
	h, taskID := startEverywhere(t)
	// user:di holds the authorizer role the compensation's approval asks
	// for, and the task does not name them: they read what they approve.
	approver := withToken(h.url, secondApproverToken)
	pending := pendingUnstash(t, approver, taskID)
	if !strings.Contains(pending.ParametersJson, lookupMark) || len(pending.ActionHash) != 64 {
		t.Errorf("the approver is shown parameters %s and action hash %q: want the compensation's, quoting the stash's result, and its plain hash to decide on", pending.ParametersJson, pending.ActionHash)
	}
	stranger := withToken(h.url, reviewerToken) // user:rev: no role, not named by the task
	content := contentOf(t, h, taskID)
	strangerWalk := walkReads(t, h.url, reviewerToken, content)
	strangerWalk.mustNotFind(t, "while the compensation waits for approval")
	// A write RPC that answers with the task, called by a role the task
	// does not name: a budget owner's raise.
	raised, err := h.funder.tasks.RaiseBudget(ctx, connect.NewRequest(&stewardv1.RaiseBudgetRequest{TaskId: taskID, MaxTokens: 60_000, Reason: "more", RequestId: "everywhere-raise"}))
	if err != nil {
		t.Fatalf("RaiseBudget by the budget owner: %v", err)
	}
	raise := walk{found: map[string][]string{}}
	raise.look("RaiseBudget", content, raised.Msg, "")
	for _, what := range raise.found["RaiseBudget"] {
		t.Errorf("RaiseBudget answers the budget owner, whom the task does not name, with content: %s", what)
	}

	if _, err := approver.governance.DecideApproval(ctx, connect.NewRequest(&stewardv1.DecideApprovalRequest{
		ApprovalId: pending.ApprovalId, ActionHash: pending.ActionHash, Decision: stewardv1.ApprovalDecision_APPROVAL_DECISION_APPROVE,
	})); err != nil {
		t.Fatalf("the approver decides what it was shown: %v", err)
	}
	waitStatus(t, h.operator.clients, taskID, stewardv1.TaskStatus_TASK_STATUS_FAILED)
	content = contentOf(t, h, taskID)
	walkReads(t, h.url, reviewerToken, content).mustNotFind(t, "once the task has ended")

	// The digests the stranger is shown in place of a result's are keyed,
	// not hidden, in dev (which has a key).
	got, err := stranger.query.GetTask(ctx, connect.NewRequest(&stewardv1.GetTaskRequest{TaskId: taskID}))
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range got.Msg.Task.Actions {
		if h := a.GetOutcome().GetResultHash(); h != "" && !strings.HasPrefix(h, "hmac-sha256:") {
			t.Errorf("action %s (%s) shows the stranger result_hash %q: want a keyed digest", a.ActionId, a.Tool, h)
		}
	}

	// The same walk by the operator finds the content where it is: the
	// compensation's request, the approval's parameters, the plan's step
	// results, the raw events.
	found := walkReads(t, h.url, operatorToken, content).found
	for _, want := range []string{"GetTask", "GetApproval", "ReplayTask", "WatchTask", "GetResult"} {
		if len(found[want]) == 0 {
			t.Errorf("the operator's walk finds no content in %s: the walk would not see a leak there", want)
		}
	}
}

// startEverywhere starts Steward with everywherePlan's tools, runs the plan
// on a task to its checkpoint and answers it, beside an artifact whose
// bytes are the lookup's result (its sha256 a plain SHA-256 of them).
func startEverywhere(t *testing.T) (*harness, string) {
	t.Helper()
	ctx := context.Background()
	tool := stewardtest.StartTool(t)
	tool.Always("/lookup", stewardtest.Answer{Work: true, Body: lookedUp})
	tool.Always("/breaks", stewardtest.Fail(http.StatusBadRequest))
	entry := func(name, effect, extra string) string {
		return fmt.Sprintf(`{"name": %q, "version": "1.0.0", "effectClass": %q, "dataSensitivity": "DATA_SENSITIVITY_INTERNAL", %s
		  "parametersSchema": "{\"type\":\"object\"}", "http": {"url": %q}}`, name, effect, extra, tool.URL+"/"+name)
	}
	h := startSteward(t, setup{tools: []string{
		entry("lookup", "EFFECT_CLASS_READ", ""),
		entry("stash", "EFFECT_CLASS_REVERSIBLE_WRITE", `"compensatingTool": "unstash",`),
		entry("unstash", "EFFECT_CLASS_IRREVERSIBLE", ""),
		entry("breaks", "EFFECT_CLASS_IDEMPOTENT_WRITE", ""),
	}})
	k := contract()
	k.AllowedTools = []string{"lookup", "stash", "unstash", "breaks"}
	taskID := h.create(t, "results-everywhere", k)
	if code, resp := postAs(t, agentToken, h.url+"/steward.v1.TaskService/SubmitPlan", fmt.Sprintf(everywherePlan, taskID)); code != http.StatusOK {
		t.Fatalf("SubmitPlan: HTTP %d %v", code, resp)
	}
	if _, err := h.agent.tasks.SubmitArtifact(ctx, connect.NewRequest(&stewardv1.SubmitArtifactRequest{
		TaskId: taskID, RequestId: "everywhere-artifact", Name: "found", MediaType: "application/json", Content: []byte(lookedUp),
	})); err != nil {
		t.Fatal(err)
	}
	waitServed(t, h.operator.clients, taskID, 30*time.Second, func(x *stewardv1.Task) (bool, string) {
		return x.GetOpenInput().GetCause() == stewardv1.NeedsInputCause_NEEDS_INPUT_CAUSE_PLAN_CHECKPOINT, describeActions(x)
	})
	if _, err := h.operator.tasks.ProvideInput(ctx, connect.NewRequest(&stewardv1.ProvideInputRequest{TaskId: taskID, Answer: answerMark, RequestId: "everywhere-answer"})); err != nil {
		t.Fatal(err)
	}
	return h, taskID
}

// pendingUnstash is the compensation's approval, as approver lists it.
func pendingUnstash(t *testing.T, approver authed, taskID string) *stewardv1.Approval {
	t.Helper()
	var pending *stewardv1.Approval
	stewardtest.Eventually(t, 30*time.Second, func() (bool, string) {
		got, err := approver.governance.ListApprovals(context.Background(), connect.NewRequest(&stewardv1.ListApprovalsRequest{TaskId: taskID, PendingOnly: true}))
		if err != nil {
			return false, err.Error()
		}
		for _, ap := range got.Msg.Approvals {
			if ap.Tool == "unstash" {
				pending = ap
			}
		}
		return pending != nil, fmt.Sprintf("approvals %v", got.Msg.Approvals)
	})
	return pending
}

// taskContent is what a caller who may not read a task's content must not
// see: the bytes, and the plain SHA-256 digests (hex) of the content and
// of the requests that quote it.
type taskContent struct {
	taskID  string
	marks   []string
	digests []string
	// ids fill the read RPCs' requests: the task's actions and approvals,
	// its artifact and the tool names.
	actionIDs, approvalIDs, names []string
}

// contentOf reads, as the operator, the task's content and what the walk
// needs to name.
func contentOf(t *testing.T, h *harness, taskID string) taskContent {
	t.Helper()
	got, err := h.operator.query.GetTask(context.Background(), connect.NewRequest(&stewardv1.GetTaskRequest{TaskId: taskID}))
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte(lookedUp))
	c := taskContent{taskID: taskID, marks: []string{lookupMark, answerMark, lookedUp}, digests: []string{hex.EncodeToString(sum[:])},
		names: []string{"found", "lookup", "stash", "unstash", "breaks"}}
	for _, a := range got.Msg.Task.Actions {
		c.actionIDs = append(c.actionIDs, a.ActionId)
		if id := a.GetApproval().GetApprovalId(); id != "" {
			c.approvalIDs = append(c.approvalIDs, id)
		}
		// A policy snapshot's input hash covers the request's parameters.
		c.digests = append(c.digests, a.GetOutcome().GetResultHash(), a.GetSnapshot().GetInputHash())
		if a.Compensates != "" || a.PlanStepId == "stash" {
			// Their requests quote a result.
			c.digests = append(c.digests, a.RequestHash, a.ActionHash)
		}
	}
	for _, a := range got.Msg.Task.Artifacts {
		c.digests = append(c.digests, a.Sha256)
	}
	return c
}

// walk is what one caller's walk of the read RPCs saw.
type walk struct {
	who string
	// calls counts the answers (responses or errors) per method;
	// answered the responses.
	calls, answered map[string]int
	// found names, per method, the content each answer held.
	found map[string][]string
}

// mustNotFind fails t if the walk found any content, and checks that it
// had answers to look in where content would be.
func (w walk) mustNotFind(t *testing.T, when string) {
	t.Helper()
	for method, what := range w.found {
		t.Errorf("%s, %s shows %s content it may not read: %s", when, method, w.who, strings.Join(what, "; "))
	}
	for _, m := range []string{"GetTask", "GetAction", "ListTasks", "GetTimeline", "GetReceipt", "ListApprovals", "GetApproval"} {
		if w.answered[m] == 0 {
			t.Errorf("%s, %s got no answer from %s to look in (calls %v)", when, w.who, m, w.calls)
		}
	}
}

// look records in w the content that msg (an answer, or an error's
// message) holds, in its binary and its JSON encoding: a request is bytes,
// which JSON shows in base64.
func (w walk) look(method string, c taskContent, msg proto.Message, errText string) {
	bin, _ := proto.Marshal(msg)
	js, _ := protojson.Marshal(msg)
	text := string(bin) + "\x00" + string(js) + "\x00" + errText
	for _, m := range c.marks {
		if strings.Contains(text, m) {
			w.found[method] = append(w.found[method], fmt.Sprintf("%q", m))
		}
	}
	for _, d := range c.digests {
		// A sentence shows a hash's first 12 digits: enough to test guesses.
		if len(d) >= 12 && strings.Contains(text, d[:12]) {
			w.found[method] = append(w.found[method], "the plain digest "+d)
		}
	}
}
