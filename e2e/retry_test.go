package e2e_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/structpb"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/gen/steward/v1/stewardv1connect"
)

// recordingTool is an HTTP tool that answers from a script, records
// every call and the work it did per op_key, and answers status queries
// from what it did.
type recordingTool struct {
	*httptest.Server
	mu     sync.Mutex
	script []string
	calls  int
	keys   []string       // op_key of every call, in order
	work   map[string]int // op_key → times the work was done
	// hold ends the "hold-" answers: "hold-503" and "hold-500" answer so,
	// without doing the work, once it is closed.
	hold chan struct{}
}

func startRecordingTool(t *testing.T, l net.Listener, script ...string) *recordingTool {
	rt := &recordingTool{script: script, work: map[string]int{}, hold: make(chan struct{})}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /call", rt.call)
	mux.HandleFunc("GET /status", rt.status)
	rt.Server = httptest.NewUnstartedServer(mux)
	if l != nil {
		rt.Listener.Close()
		rt.Listener = l
	}
	rt.Start()
	t.Cleanup(rt.Close)
	return rt
}

func (rt *recordingTool) call(w http.ResponseWriter, r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
	key := r.Header.Get("Idempotency-Key")
	rt.mu.Lock()
	answer := "ok"
	if rt.calls < len(rt.script) {
		answer = rt.script[rt.calls]
	}
	rt.calls++
	rt.keys = append(rt.keys, key)
	if answer == "ok" || answer == "work-500" {
		rt.work[key]++
	}
	rt.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	if held, ok := strings.CutPrefix(answer, "hold-"); ok {
		select {
		case <-rt.hold:
		case <-r.Context().Done():
		}
		answer = held
	}
	switch answer {
	case "ok":
		_, _ = fmt.Fprintf(w, `{"done": %q}`, key)
	case "work-500": // did the work, then failed to say so
		w.WriteHeader(http.StatusInternalServerError)
		_, _ = io.WriteString(w, `{"message": "internal error after the transfer"}`)
	default:
		var code int
		_, _ = fmt.Sscan(answer, &code)
		w.WriteHeader(code)
		_, _ = fmt.Fprintf(w, `{"message": "scripted %d"}`, code)
	}
}

func (rt *recordingTool) status(w http.ResponseWriter, r *http.Request) {
	key := r.URL.Query().Get("op_key")
	rt.mu.Lock()
	done := rt.work[key] > 0
	rt.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	if done {
		_ = json.NewEncoder(w).Encode(map[string]any{"state": "succeeded", "result": map[string]any{"done": key}})
		return
	}
	_ = json.NewEncoder(w).Encode(map[string]any{"state": "not_accepted"})
}

// record returns the calls made and the work done for key.
func (rt *recordingTool) record(key string) (calls int, keys []string, work int) {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	return rt.calls, append([]string(nil), rt.keys...), rt.work[key]
}

// TestRetriesByEffectClass: an irreversible tool that does the work and
// answers 500, not honouring its key, is called once; its outcome is
// unknown and settled once, by its status query or by a person. A request
// that never arrived is retried for any tool; a write honouring its key is
// retried with the same op_key; a 400 stays failed.
func TestRetriesByEffectClass(t *testing.T) {
	queried := startRecordingTool(t, nil, "work-500")
	unqueried := startRecordingTool(t, nil, "work-500")
	honouring := startRecordingTool(t, nil, "503", "ok")
	refusing := freeAddr(t) // nothing listens until the first try has failed
	bad := startRecordingTool(t, nil, "400")
	const fast = `"retryPolicy": {"maxAttempts": 5, "initialBackoff": "0.05s", "maxBackoff": "0.2s"}`
	tools := fmt.Sprintf(`{"tools": [
	  {"name": "wire-q", "version": "1", "effectClass": "EFFECT_CLASS_IRREVERSIBLE", "dataSensitivity": "DATA_SENSITIVITY_INTERNAL",
	   "statusQuery": true, "http": {"url": %q, "statusUrl": %q}, %s},
	  {"name": "wire", "version": "1", "effectClass": "EFFECT_CLASS_IRREVERSIBLE", "dataSensitivity": "DATA_SENSITIVITY_INTERNAL", "http": {"url": %q}, %s},
	  {"name": "wire-down", "version": "1", "effectClass": "EFFECT_CLASS_IRREVERSIBLE", "dataSensitivity": "DATA_SENSITIVITY_INTERNAL", "http": {"url": %q}, %s},
	  {"name": "charge", "version": "1", "effectClass": "EFFECT_CLASS_IDEMPOTENT_WRITE", "dataSensitivity": "DATA_SENSITIVITY_PUBLIC",
	   "idempotency": {"honoursKey": true}, "http": {"url": %q}, %s},
	  {"name": "lookup", "version": "1", "effectClass": "EFFECT_CLASS_READ", "dataSensitivity": "DATA_SENSITIVITY_PUBLIC", "http": {"url": %q}, %s}
	]}`, queried.URL+"/call", queried.URL+"/status", fast, unqueried.URL+"/call", fast, "http://"+refusing+"/call", fast,
		honouring.URL+"/call", fast, bad.URL+"/call", fast)
	tokens := fmt.Sprintf(`{"tokens": [
	  {"token": %q, "principal": "agent:summariser", "roles": []},
	  {"token": %q, "principal": "user:bo", "roles": ["authorizer"]},
	  {"token": %q, "principal": "user:ops", "roles": ["operator"]}
	]}`, agentToken, approverToken, tableOperatorToken)
	dir := t.TempDir()
	p := startBinary(t, t.TempDir(), "--tools", writeFile(t, dir, "tools.json", tools), "--auth", writeFile(t, dir, "tokens.json", tokens))
	agent, approver := withToken(p.url, agentToken), withToken(p.url, approverToken)
	ctx := context.Background()

	k := contract()
	k.AllowedTools = []string{"wire-q", "wire", "wire-down", "charge", "lookup"}
	k.AuthorizerRef = "user:bo"
	resp, err := agent.tasks.CreateTask(ctx, connect.NewRequest(&stewardv1.CreateTaskRequest{RequestId: "retries", Contract: k}))
	if err != nil {
		t.Fatal(err)
	}
	taskID := resp.Msg.Task.Contract.TaskId
	waitStarted(t, agent.clients, taskID)
	run := func(proposal, tool string) *stewardv1.Action {
		t.Helper()
		params, _ := structpb.NewStruct(map[string]any{"amount": 100})
		a, err := agent.tasks.ProposeAction(ctx, connect.NewRequest(&stewardv1.ProposeActionRequest{TaskId: taskID, ProposalId: proposal, Tool: tool, Target: "acct:42", Params: params}))
		if err != nil {
			t.Fatal(err)
		}
		return a.Msg.Action
	}
	approve := func(a *stewardv1.Action) {
		t.Helper()
		_, w := waitAction(t, agent.clients, taskID, a.ActionId, stewardv1.ActionStatus_ACTION_STATUS_AWAITING_APPROVAL)
		// The approver is told the rule before deciding.
		if !strings.Contains(w.Approval.GetExpectedImpact(), "no automatic retry") {
			t.Errorf("the approval says %q; want it to say there is no automatic retry", w.Approval.GetExpectedImpact())
		}
		if _, err := approver.governance.DecideApproval(ctx, connect.NewRequest(&stewardv1.DecideApprovalRequest{
			ApprovalId: w.Approval.ApprovalId, ActionHash: w.ActionHash, Decision: stewardv1.ApprovalDecision_APPROVAL_DECISION_APPROVE,
		})); err != nil {
			t.Fatal(err)
		}
	}

	t.Run("irreversible, 500 after the work, settled by the status query", func(t *testing.T) {
		a := run("q", "wire-q")
		approve(a)
		_, done := waitAction(t, agent.clients, taskID, a.ActionId, stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED)
		calls, _, work := queried.record(done.OpKey)
		if calls != 1 || work != 1 || done.SettledBy == "" {
			t.Fatalf("%d calls, work done %d times, settled by %q; want 1, 1, the status query", calls, work, done.SettledBy)
		}
	})
	t.Run("irreversible, 500 after the work, settled by a person", func(t *testing.T) {
		a := run("p", "wire")
		approve(a)
		_, u := waitAction(t, agent.clients, taskID, a.ActionId, stewardv1.ActionStatus_ACTION_STATUS_UNKNOWN)
		if !strings.Contains(u.Outcome.GetReason(), "not called again") {
			t.Errorf("unknown because %q; want the rule named", u.Outcome.GetReason())
		}
		ops := stewardv1connect.NewActionServiceClient(http.DefaultClient, p.url, connect.WithInterceptors(bearer(tableOperatorToken)))
		if _, err := ops.SettleAction(ctx, connect.NewRequest(&stewardv1.SettleActionRequest{TaskId: taskID, ActionId: a.ActionId,
			State: stewardv1.SettleState_SETTLE_STATE_SUCCEEDED, Reason: "the bank shows one transfer"})); err != nil {
			t.Fatal(err)
		}
		_, done := waitAction(t, agent.clients, taskID, a.ActionId, stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED)
		if calls, _, work := unqueried.record(done.OpKey); calls != 1 || work != 1 {
			t.Fatalf("%d calls, work done %d times; want 1 and 1", calls, work)
		}
	})
	t.Run("irreversible, refusing connections, then up", func(t *testing.T) {
		a := run("down", "wire-down")
		approve(a)
		waitAction(t, agent.clients, taskID, a.ActionId, stewardv1.ActionStatus_ACTION_STATUS_WAITING)
		l, err := net.Listen("tcp", refusing)
		if err != nil {
			t.Fatal(err)
		}
		up := startRecordingTool(t, l)
		_, done := waitAction(t, agent.clients, taskID, a.ActionId, stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED)
		if calls, _, work := up.record(done.OpKey); calls != 1 || work != 1 {
			t.Fatalf("%d calls reached the tool, work done %d times; want 1 and 1", calls, work)
		}
	})
	t.Run("a write honouring its key, 503 then 200", func(t *testing.T) {
		a := run("h", "charge")
		_, done := waitAction(t, agent.clients, taskID, a.ActionId, stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED)
		calls, keys, _ := honouring.record(done.OpKey)
		if calls != 2 || keys[0] != done.OpKey || keys[1] != done.OpKey {
			t.Fatalf("%d calls with keys %v; want 2, both %s", calls, keys, done.OpKey)
		}
	})
	t.Run("a 400 stays failed", func(t *testing.T) {
		a := run("b", "lookup")
		_, done := waitAction(t, agent.clients, taskID, a.ActionId, stewardv1.ActionStatus_ACTION_STATUS_FAILED)
		if done.Outcome.FailureClass != stewardv1.FailureClass_FAILURE_CLASS_DETERMINISTIC {
			t.Fatalf("failed as %s; want deterministic", done.Outcome.FailureClass)
		}
		if calls, _, _ := bad.record(done.OpKey); calls != 1 {
			t.Fatalf("%d calls; want 1", calls)
		}
	})
}
