package e2e_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/steward-run/steward/pkg/event"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/stewardtest"
)

// openTask is a task that may call search and wire, with no authorizer
// named: any approver with the role may decide its approvals.
func openTask(t *testing.T, c authed, requestID string) string {
	t.Helper()
	k := contract()
	k.AllowedTools = []string{"search", "wire"}
	resp, err := c.tasks.CreateTask(context.Background(), connect.NewRequest(&stewardv1.CreateTaskRequest{RequestId: requestID, Contract: k}))
	if err != nil {
		t.Fatal(err)
	}
	waitStarted(t, c.clients, resp.Msg.Task.Contract.TaskId)
	return resp.Msg.Task.Contract.TaskId
}

// answer decides a's approval as c, with decision and, for an amendment,
// params.
func answer(c authed, a *stewardv1.Action, decision stewardv1.ApprovalDecision, params map[string]any) (*stewardv1.Approval, error) {
	req := &stewardv1.DecideApprovalRequest{ApprovalId: a.Approval.ApprovalId, ActionHash: a.ActionHash, Decision: decision}
	if params != nil {
		s, err := structpb.NewStruct(params)
		if err != nil {
			return nil, err
		}
		req.AmendedParams = s
	}
	resp, err := c.governance.DecideApproval(context.Background(), connect.NewRequest(req))
	if err != nil {
		return nil, err
	}
	return resp.Msg.Approval, nil
}

// wantCode fails the test unless err has code and says each of says.
func wantCode(t *testing.T, err error, code connect.Code, says ...string) {
	t.Helper()
	if connect.CodeOf(err) != code {
		t.Fatalf("got %v, want %v", err, code)
	}
	for _, s := range says {
		if !strings.Contains(err.Error(), s) {
			t.Fatalf("got %v, want it to say %q", err, s)
		}
	}
}

// TestAmendedApproval runs an amendment against the real binary: the
// approver answers a wire of 500 with 50. Bad answers are refused naming
// the field; the decision, retried, is answered with the same approval and
// one amended action; the original is rejected and names it (GetAction,
// WatchTask); the amended action, proposed in the approver's name, waits
// for an approval of its own, which the amender may not give and another
// approver does; the tool is called once, with 50, and never with 500;
// the receipt shows the amendment.
func TestAmendedApproval(t *testing.T) {
	tool := stewardtest.StartTool(t)
	h := startSteward(t, setup{tools: governedTools(tool)})
	bo, di := h.approver, withToken(h.url, secondApproverToken)
	ctx := context.Background()
	taskID := openTask(t, h.agent, "amend-1")
	wire := propose(t, h.agent, taskID, "wire-1", "wire", map[string]any{"amount": 500})
	_, wire = waitAction(t, h.agent.clients, taskID, wire.ActionId, stewardv1.ActionStatus_ACTION_STATUS_AWAITING_APPROVAL)
	amend := stewardv1.ApprovalDecision_APPROVAL_DECISION_AMEND

	_, err := answer(bo, wire, amend, map[string]any{"amount": 0})
	wantCode(t, err, connect.CodeInvalidArgument, "amended_params")
	_, err = answer(bo, wire, amend, nil)
	wantCode(t, err, connect.CodeInvalidArgument, "amended_params", "is required")
	_, err = answer(bo, wire, stewardv1.ApprovalDecision_APPROVAL_DECISION_APPROVE, map[string]any{"amount": 50})
	wantCode(t, err, connect.CodeInvalidArgument, "amended_params", "only for APPROVAL_DECISION_AMEND")

	var amendedID string
	for range 2 { // the second is a retry after a lost answer
		ap, err := answer(bo, wire, amend, map[string]any{"amount": 50})
		if err != nil {
			t.Fatal(err)
		}
		if ap.Decision != amend || ap.DecidedBy != "user:bo" || ap.AmendedActionId == "" || ap.AmendedParamsJson != `{"amount":50}` ||
			amendedID != "" && ap.AmendedActionId != amendedID {
			t.Fatalf("the amended approval: %v", ap)
		}
		amendedID = ap.AmendedActionId
	}
	_, err = answer(bo, wire, amend, map[string]any{"amount": 60})
	wantCode(t, err, connect.CodeFailedPrecondition, "already decided")

	_, orig := waitAction(t, h.agent.clients, taskID, wire.ActionId, stewardv1.ActionStatus_ACTION_STATUS_REJECTED)
	if orig.AmendedAs != amendedID || !strings.Contains(orig.Outcome.GetReason(), amendedID) || orig.Permit != nil {
		t.Fatalf("the original does not name its amendment: %v", orig)
	}
	_, amended := waitAction(t, h.agent.clients, taskID, amendedID, stewardv1.ActionStatus_ACTION_STATUS_AWAITING_APPROVAL)
	if amended.ProposedBy != "user:bo" || amended.AmendmentOf != wire.ActionId || amended.ActionHash == wire.ActionHash || amended.Approval.GetParametersJson() != `{"amount":50}` {
		t.Fatalf("the amended action: %v", amended)
	}
	_, err = answer(bo, amended, stewardv1.ApprovalDecision_APPROVAL_DECISION_APPROVE, nil)
	wantCode(t, err, connect.CodePermissionDenied, "user:bo proposed action "+amendedID)
	_, err = answer(bo, amended, stewardv1.ApprovalDecision_APPROVAL_DECISION_PERSON_EXECUTES, nil)
	wantCode(t, err, connect.CodePermissionDenied, "user:bo")
	if _, err := answer(di, amended, stewardv1.ApprovalDecision_APPROVAL_DECISION_APPROVE, nil); err != nil {
		t.Fatal(err)
	}
	waitAction(t, h.agent.clients, taskID, amendedID, stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED)
	if tool.CallsFor(amended.OpKey) != 1 || tool.CallsFor(wire.OpKey) != 0 || tool.CallsTo("/wire") != 1 {
		t.Fatalf("calls: amended %d, original %d, in all %d; want the amended one once", tool.CallsFor(amended.OpKey), tool.CallsFor(wire.OpKey), tool.CallsTo("/wire"))
	}
	for _, r := range tool.Requests() {
		if !strings.Contains(string(r.Body), `"amount":50`) {
			t.Fatalf("the tool got %s, want the amended amount", r.Body)
		}
	}
	history := replayTask(t, withToken(h.url, adminToken).clients, taskID)
	if n := countType(history, event.TypeApprovalDecided); n != 2 {
		t.Fatalf("%d decisions on the log, want the amendment and the approval", n)
	}
	logAmendmentDelay(t, history, amendedID)

	// The agent, watching, sees the amendment and the action it asks for.
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stream, err := h.agent.query.WatchTask(wctx, connect.NewRequest(&stewardv1.WatchTaskRequest{TaskId: taskID}))
	if err != nil {
		t.Fatal(err)
	}
	var decided, proposed bool
	for !(decided && proposed) && stream.Receive() {
		ev := stream.Msg().GetRecord().GetEvent()
		decided = decided || ev.GetApprovalDecided().GetAmendedActionId() == amendedID
		proposed = proposed || ev.GetActionProposed().GetAction().GetAmendmentOf() == wire.ActionId
	}
	if !decided || !proposed {
		t.Fatalf("WatchTask: decision naming %s %v, its proposal %v; %v", amendedID, decided, proposed, stream.Err())
	}

	rc, err := h.agent.query.GetReceipt(ctx, connect.NewRequest(&stewardv1.GetReceiptRequest{TaskId: taskID}))
	if err != nil {
		t.Fatal(err)
	}
	var linked bool
	for _, c := range rc.Msg.Receipt.Calls {
		linked = linked || c.ActionId == amendedID && c.AmendmentOf == wire.ActionId && c.ApprovedBy == "user:di"
	}
	if ap := rc.Msg.Receipt.Approvals; !linked || len(ap) != 2 || ap[0].AmendedActionId != amendedID || !strings.Contains(rc.Msg.Markdown, "amended as `"+amendedID) {
		t.Fatalf("the receipt does not show the amendment: %v\n%s", rc.Msg.Receipt, rc.Msg.Markdown)
	}
}

// TestPersonExecutes: an approver answers that they do the wire
// themselves. No permit is issued and the tool is never called; the
// action waits, and only that person settles it — not an operator, not
// another approver, not without evidence; then it has succeeded, and the
// receipt names the person and the evidence.
func TestPersonExecutes(t *testing.T) {
	tool := stewardtest.StartTool(t)
	h := startSteward(t, setup{tools: governedTools(tool)})
	bo := h.approver
	ctx := context.Background()
	taskID := openTask(t, h.agent, "by-person-1")
	wire := propose(t, h.agent, taskID, "wire-1", "wire", map[string]any{"amount": 7})
	_, wire = waitAction(t, h.agent.clients, taskID, wire.ActionId, stewardv1.ActionStatus_ACTION_STATUS_AWAITING_APPROVAL)

	ap, err := answer(bo, wire, stewardv1.ApprovalDecision_APPROVAL_DECISION_PERSON_EXECUTES, nil)
	if err != nil {
		t.Fatal(err)
	}
	if ap.Decision != stewardv1.ApprovalDecision_APPROVAL_DECISION_PERSON_EXECUTES || ap.DecidedBy != "user:bo" {
		t.Fatalf("approval: %v", ap)
	}
	waitAction(t, h.agent.clients, taskID, wire.ActionId, stewardv1.ActionStatus_ACTION_STATUS_PERSON_EXECUTING)

	settle := func(token string, state stewardv1.SettleState, evidence ...string) (*stewardv1.Action, error) {
		resp, err := actionClient(h.url, token).SettleAction(ctx, connect.NewRequest(&stewardv1.SettleActionRequest{
			TaskId: taskID, ActionId: wire.ActionId, State: state, Reason: "sent from the bank's portal", Evidence: evidence,
		}))
		if err != nil {
			return nil, err
		}
		return resp.Msg.Action, nil
	}
	done := stewardv1.SettleState_SETTLE_STATE_SUCCEEDED
	for _, token := range []string{operatorToken, secondApproverToken, agentToken} {
		_, err := settle(token, done, "ticket:OPS-1")
		wantCode(t, err, connect.CodePermissionDenied, "user:bo")
	}
	_, err = settle(approverToken, done)
	wantCode(t, err, connect.CodeInvalidArgument, "evidence")
	_, err = settle(approverToken, done, "ticket:OPS-1", "")
	wantCode(t, err, connect.CodeInvalidArgument, "evidence", "entry 1 is empty")
	_, err = settle(approverToken, done, tooMuchEvidence()...)
	wantCode(t, err, connect.CodeResourceExhausted, "evidence")
	_, err = settle(approverToken, stewardv1.SettleState_SETTLE_STATE_NOT_ACCEPTED, "ticket:OPS-1")
	wantCode(t, err, connect.CodeInvalidArgument, "state")

	a, err := settle(approverToken, done, "ticket:OPS-1", "https://bank.example/tx/9")
	if err != nil {
		t.Fatal(err)
	}
	if a.Status != stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED || a.SettledBy != "user:bo" || a.Permit != nil || len(a.Outcome.GetEvidence()) != 2 {
		t.Fatalf("settled: %v", a)
	}
	if _, err := settle(approverToken, done, "ticket:OPS-1", "https://bank.example/tx/9"); err != nil {
		t.Fatalf("a retried settlement: %v", err)
	}
	if tool.Calls() != 0 || countType(replayTask(t, withToken(h.url, adminToken).clients, taskID), event.TypeActionPermitted) != 0 {
		t.Fatalf("a person's execution called the tool (%d) or was permitted", tool.Calls())
	}
	rc, err := h.agent.query.GetReceipt(ctx, connect.NewRequest(&stewardv1.GetReceiptRequest{TaskId: taskID}))
	if err != nil {
		t.Fatal(err)
	}
	if c := rc.Msg.Receipt.Calls; len(c) != 1 || c[0].ExecutedBy != "user:bo" || len(c[0].Evidence) != 2 || !strings.Contains(rc.Msg.Markdown, "executed by user:bo, a person") {
		t.Fatalf("the receipt does not show the person's execution: %v\n%s", c, rc.Msg.Markdown)
	}
}

// tooMuchEvidence is one more piece of evidence than a settlement takes.
func tooMuchEvidence() []string {
	out := make([]string, 17)
	for i := range out {
		out[i] = "ticket:" + strings.Repeat("x", i+1)
	}
	return out
}

// logAmendmentDelay logs, by the events' times, how long the amended
// action took from the amendment to its proposal and to its own approval
// request: what the round through the log costs an approver.
func logAmendmentDelay(t *testing.T, history []*stewardv1.EventRecord, amendedID string) {
	var decided, proposed, asked time.Time
	for _, r := range history {
		ev := r.Event
		switch {
		case ev.GetApprovalDecided().GetAmendedActionId() == amendedID:
			decided = ev.Time.AsTime()
		case ev.GetActionProposed().GetAction().GetActionId() == amendedID:
			proposed = ev.Time.AsTime()
		case ev.GetApprovalRequested().GetApproval().GetActionId() == amendedID:
			asked = ev.Time.AsTime()
		}
	}
	t.Logf("amendment → amended proposal %v, → its approval request %v", proposed.Sub(decided), asked.Sub(decided))
}
