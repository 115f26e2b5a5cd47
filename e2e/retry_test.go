package e2e_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/structpb"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/stewardtest"
)

// TestRetriesByEffectClass: an irreversible tool that does the work and
// answers 500, not honouring its key, is called once; its outcome is
// unknown and settled once, by its status query or by a person. A request
// that never arrived is retried for any tool; a write honouring its key is
// retried with the same op_key; a 400 stays failed.
func TestRetriesByEffectClass(t *testing.T) {
	tool := stewardtest.StartTool(t).IgnoreKeys().
		Script("/wire-q", stewardtest.WorkThenFail(http.StatusInternalServerError)).
		Script("/wire", stewardtest.WorkThenFail(http.StatusInternalServerError)).
		Script("/charge", stewardtest.Fail(http.StatusServiceUnavailable)).
		Script("/lookup", stewardtest.Fail(http.StatusBadRequest))
	refusing := stewardtest.FreeAddr(t) // nothing listens until the first try has failed
	const fast = `"retryPolicy": {"maxAttempts": 5, "initialBackoff": "0.05s", "maxBackoff": "0.2s"}`
	tools := fmt.Sprintf(`{"name": "wire-q", "version": "1", "effectClass": "EFFECT_CLASS_IRREVERSIBLE", "dataSensitivity": "DATA_SENSITIVITY_INTERNAL",
	   "statusQuery": true, "http": {"url": %q, "statusUrl": %q}, %s},
	  {"name": "wire", "version": "1", "effectClass": "EFFECT_CLASS_IRREVERSIBLE", "dataSensitivity": "DATA_SENSITIVITY_INTERNAL", "http": {"url": %q}, %s},
	  {"name": "wire-down", "version": "1", "effectClass": "EFFECT_CLASS_IRREVERSIBLE", "dataSensitivity": "DATA_SENSITIVITY_INTERNAL", "http": {"url": %q}, %s},
	  {"name": "charge", "version": "1", "effectClass": "EFFECT_CLASS_IDEMPOTENT_WRITE", "dataSensitivity": "DATA_SENSITIVITY_PUBLIC",
	   "idempotency": {"honoursKey": true}, "http": {"url": %q}, %s},
	  {"name": "lookup", "version": "1", "effectClass": "EFFECT_CLASS_READ", "dataSensitivity": "DATA_SENSITIVITY_PUBLIC", "http": {"url": %q}, %s}`, tool.URL+"/wire-q", tool.URL+"/status", fast, tool.URL+"/wire", fast, "http://"+refusing+"/wire-down", fast,
		tool.URL+"/charge", fast, tool.URL+"/lookup", fast)
	h := startSteward(t, setup{tools: []string{tools}})
	agent, approver := h.agent, h.approver
	ctx := context.Background()

	k := contract()
	k.AllowedTools = []string{"wire-q", "wire", "wire-down", "charge", "lookup"}
	k.AuthorizerRef = "user:bo"
	taskID := h.create(t, "retries", k)
	run := func(proposal, tool string) *stewardv1.Action {
		t.Helper()
		params, _ := structpb.NewStruct(map[string]any{"amount": 100})
		a, err := agent.tasks.ProposeAction(ctx, connect.NewRequest(&stewardv1.ProposeActionRequest{TaskId: taskID, ProposalId: proposal, Tool: tool, Target: "acct:42", Params: params, Rationale: argued}))
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
		calls, work := tool.CallsTo("/wire-q"), tool.Executions(done.OpKey)
		if calls != 1 || work != 1 {
			t.Fatalf("%d calls, work done %d times; want 1 and 1", calls, work)
		}
		unknownThenSettledOnce(t, agent.clients, taskID, a.ActionId, statusQuerySettler)
	})
	t.Run("irreversible, 500 after the work, settled by a person", func(t *testing.T) {
		a := run("p", "wire")
		approve(a)
		_, u := waitAction(t, agent.clients, taskID, a.ActionId, stewardv1.ActionStatus_ACTION_STATUS_UNKNOWN)
		if !strings.Contains(u.Outcome.GetReason(), "not called again") {
			t.Errorf("unknown because %q; want the rule named", u.Outcome.GetReason())
		}
		if _, err := h.ops.SettleAction(ctx, connect.NewRequest(&stewardv1.SettleActionRequest{TaskId: taskID, ActionId: a.ActionId,
			State: stewardv1.SettleState_SETTLE_STATE_SUCCEEDED, Reason: "the bank shows one transfer"})); err != nil {
			t.Fatal(err)
		}
		_, done := waitAction(t, agent.clients, taskID, a.ActionId, stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED)
		if calls, work := tool.CallsTo("/wire"), tool.Executions(done.OpKey); calls != 1 || work != 1 {
			t.Fatalf("%d calls, work done %d times; want 1 and 1", calls, work)
		}
		unknownThenSettledOnce(t, agent.clients, taskID, a.ActionId, "user:ops")
	})
	t.Run("irreversible, refusing connections, then up", func(t *testing.T) {
		a := run("down", "wire-down")
		approve(a)
		waitAction(t, agent.clients, taskID, a.ActionId, stewardv1.ActionStatus_ACTION_STATUS_WAITING)
		l, err := net.Listen("tcp", refusing)
		if err != nil {
			t.Fatal(err)
		}
		serveOn(t, tool, l)
		_, done := waitAction(t, agent.clients, taskID, a.ActionId, stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED)
		if calls, work := tool.CallsTo("/wire-down"), tool.Executions(done.OpKey); calls != 1 || work != 1 {
			t.Fatalf("%d calls reached the tool, work done %d times; want 1 and 1", calls, work)
		}
	})
	t.Run("a write honouring its key, 503 then 200", func(t *testing.T) {
		a := run("h", "charge")
		_, done := waitAction(t, agent.clients, taskID, a.ActionId, stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED)
		keys := callKeys(tool, "/charge")
		if calls := len(keys); calls != 2 || keys[0] != done.OpKey || keys[1] != done.OpKey {
			t.Fatalf("%d calls with keys %v; want 2, both %s", calls, keys, done.OpKey)
		}
	})
	t.Run("a 400 stays failed", func(t *testing.T) {
		a := run("b", "lookup")
		_, done := waitAction(t, agent.clients, taskID, a.ActionId, stewardv1.ActionStatus_ACTION_STATUS_FAILED)
		if done.Outcome.FailureClass != stewardv1.FailureClass_FAILURE_CLASS_DETERMINISTIC {
			t.Fatalf("failed as %s; want deterministic", done.Outcome.FailureClass)
		}
		if calls := tool.CallsTo("/lookup"); calls != 1 {
			t.Fatalf("%d calls; want 1", calls)
		}
	})
}

// unknownThenSettledOnce checks actionID's ledger: its outcome was
// recorded unknown, and then settled once, by by. The action's status
// alone would not show it: a status query that settles at once leaves it
// succeeded, as a call that simply worked does.
func unknownThenSettledOnce(t *testing.T, c clients, taskID, actionID, by string) {
	t.Helper()
	history := replayTask(t, c, taskID)
	u := unknownOutcome(history, actionID)
	if u == nil {
		t.Fatalf("action %s: no unknown outcome on the ledger", actionID)
	}
	var settled []string
	for _, rec := range history {
		if s := rec.Event.GetActionSettled(); s.GetActionId() == actionID {
			if rec.Sequence < u.Sequence {
				t.Errorf("action %s settled at %d, before its unknown outcome at %d", actionID, rec.Sequence, u.Sequence)
			}
			settled = append(settled, s.SettledBy)
		}
	}
	if len(settled) != 1 || settled[0] != by {
		t.Errorf("action %s settled by %q; want once, by %q", actionID, settled, by)
	}
}

// serveOn serves tool on l as well: a tool that comes up at an address
// where nothing listened before.
func serveOn(t *testing.T, tool *stewardtest.Tool, l net.Listener) {
	t.Helper()
	srv := &http.Server{Handler: tool.Config.Handler}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })
}

// callKeys returns the Idempotency-Key of every call to path, in order.
func callKeys(tool *stewardtest.Tool, path string) []string {
	var keys []string
	for _, r := range tool.Requests() {
		if r.Method == http.MethodPost && r.Path == path {
			keys = append(keys, r.Header.Get("Idempotency-Key"))
		}
	}
	return keys
}
