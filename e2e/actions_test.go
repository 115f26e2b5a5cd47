package e2e_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/steward-run/steward/pkg/action"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/gen/steward/v1/stewardv1connect"
	"github.com/steward-run/steward/pkg/stewardtest"
)

// governedTools are the tools file's entries for a read, search, and an
// irreversible write, wire, both served by tool.
func governedTools(tool *stewardtest.Tool) []string {
	return []string{
		fmt.Sprintf(`{"name": "search", "version": "1.0.0", "effectClass": "EFFECT_CLASS_READ", "dataSensitivity": "DATA_SENSITIVITY_INTERNAL",
	   "parametersSchema": "{\"type\":\"object\",\"required\":[\"q\"],\"properties\":{\"q\":{\"type\":\"string\",\"minLength\":1}}}",
	   "http": {"url": %q}}`, tool.URL+"/search"),
		fmt.Sprintf(`{"name": "wire", "version": "1.0.0", "effectClass": "EFFECT_CLASS_IRREVERSIBLE", "dataSensitivity": "DATA_SENSITIVITY_CONFIDENTIAL",
	   "parametersSchema": "{\"type\":\"object\",\"required\":[\"amount\"],\"properties\":{\"amount\":{\"type\":\"integer\",\"minimum\":1}}}",
	   "http": {"url": %q}}`, tool.URL+"/wire"),
	}
}

func governedTask(t *testing.T, c authed, requestID string) string {
	t.Helper()
	k := contract()
	k.AllowedTools = []string{"search", "wire"}
	k.AuthorizerRef = "user:bo"
	resp, err := c.tasks.CreateTask(context.Background(), connect.NewRequest(&stewardv1.CreateTaskRequest{RequestId: requestID, Contract: k}))
	if err != nil {
		t.Fatal(err)
	}
	id := resp.Msg.Task.Contract.TaskId
	waitStarted(t, c.clients, id)
	return id
}

// argued is the case the e2e agents make for their proposals: the default
// bundle denies a high-risk change (an irreversible write) whose proposer
// says nothing of its impact and rollback plan.
var argued = &stewardv1.ActionRationale{
	ExpectedImpact: "moves the amount to acct:42",
	RollbackPlan:   "none automatic: ask the payee to send it back",
	Evidence:       []string{"ticket:INC-7"},
	Alternatives:   []string{"wait for the next payment run"},
}

func propose(t *testing.T, c authed, taskID, proposalID, tool string, params map[string]any) *stewardv1.Action {
	t.Helper()
	s, err := structpb.NewStruct(params)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := c.tasks.ProposeAction(context.Background(), connect.NewRequest(&stewardv1.ProposeActionRequest{
		TaskId: taskID, ProposalId: proposalID, Tool: tool, Target: "acct:42", Params: s, Rationale: argued,
	}))
	if err != nil {
		t.Fatalf("propose %s: %v", tool, err)
	}
	return resp.Msg.Action
}

// TestGovernedActions walks the heart of Steward with the real binary and
// a real HTTP tool: a read runs without approval; an irreversible write
// waits, is approved by a person with the role, runs exactly once, and its
// ledger entry names the snapshot, the approver and the permit; a decision
// for another hash, or by someone without the role, is refused; an edit
// is a new action that needs its own decision.
func TestGovernedActions(t *testing.T) {
	tool := stewardtest.StartTool(t)
	h := startSteward(t, setup{tools: governedTools(tool)})
	agent, approver, viewer := h.agent, h.approver, h.viewer
	ctx := context.Background()
	taskID := governedTask(t, agent, "governed-1")

	// A read runs at once.
	read := propose(t, agent, taskID, "read-1", "search", map[string]any{"q": "incidents last week"})
	_, done := waitAction(t, agent.clients, taskID, read.ActionId, stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED)
	if done.Snapshot.GetDecision() != stewardv1.PolicyDecision_POLICY_DECISION_ALLOW || done.Permit == nil {
		t.Fatalf("read ledger entry: %v", done)
	}
	// A small result travels in the outcome, under its hash.
	if o := done.Outcome; o.ResultRef != "" || !strings.Contains(string(o.Result), `"ok":true`) || action.RequestHash(o.Result) != o.ResultHash {
		t.Fatalf("read's outcome: result %q at %q, hash %s; want it inline, hashing to its result_hash", o.Result, o.ResultRef, o.ResultHash)
	}
	if n := tool.CallsFor(read.OpKey); n != 1 {
		t.Fatalf("the read ran %d times, want 1", n)
	}

	// An irreversible write waits for a person.
	wire := propose(t, agent, taskID, "wire-1", "wire", map[string]any{"amount": 120})
	tk, _ := waitAction(t, agent.clients, taskID, wire.ActionId, stewardv1.ActionStatus_ACTION_STATUS_AWAITING_APPROVAL)
	if tk.Status != stewardv1.TaskStatus_TASK_STATUS_WAITING_FOR_APPROVAL {
		t.Fatalf("task is %v while an approval is open", tk.Status)
	}
	list, err := approver.governance.ListApprovals(ctx, connect.NewRequest(&stewardv1.ListApprovalsRequest{TaskId: taskID, PendingOnly: true}))
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Msg.Approvals) != 1 {
		t.Fatalf("pending approvals: %v", list.Msg.Approvals)
	}
	ap := list.Msg.Approvals[0]
	if ap.ActionHash != wire.ActionHash || ap.Tool != "wire" || ap.ParametersJson != `{"amount":120}` || len(ap.PolicyReasons) == 0 || ap.ExpectedImpact == "" {
		t.Fatalf("the approval does not show what a person needs: %v", ap)
	}

	decide := func(c authed, hash string) error {
		_, err := c.governance.DecideApproval(ctx, connect.NewRequest(&stewardv1.DecideApprovalRequest{
			ApprovalId: ap.ApprovalId, ActionHash: hash, Decision: stewardv1.ApprovalDecision_APPROVAL_DECISION_APPROVE, Comment: "ok for the quarter",
		}))
		return err
	}
	if err := decide(approver, read.ActionHash); connect.CodeOf(err) != connect.CodeInvalidArgument {
		t.Fatalf("approval of a different hash: %v, want invalid_argument", err)
	}
	if err := decide(viewer, wire.ActionHash); connect.CodeOf(err) != connect.CodePermissionDenied {
		t.Fatalf("approval without the role: %v, want permission_denied", err)
	}
	if err := decide(withToken(h.url, "no-such-token-000000"), wire.ActionHash); connect.CodeOf(err) != connect.CodeUnauthenticated {
		t.Fatalf("approval with an unknown token: %v, want unauthenticated", err)
	}
	if n := tool.CallsFor(wire.OpKey); n != 0 {
		t.Fatalf("the write ran %d times before approval", n)
	}
	if err := decide(approver, wire.ActionHash); err != nil {
		t.Fatal(err)
	}
	tk, done = waitAction(t, agent.clients, taskID, wire.ActionId, stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED)
	if done.Approval.GetDecidedBy() != "user:bo" || done.Permit.GetPermitId() == "" || done.Snapshot.GetSnapshotId() == "" || done.Snapshot.GetBundleRevision() == "" {
		t.Fatalf("ledger entry does not name approver, permit and snapshot: %v", done)
	}
	if tk.Status != stewardv1.TaskStatus_TASK_STATUS_RUNNING {
		t.Fatalf("task is %v after the approval, want running", tk.Status)
	}
	if err := decide(approver, wire.ActionHash); connect.CodeOf(err) != connect.CodeFailedPrecondition {
		t.Fatalf("a second decision: %v, want failed_precondition", err)
	}
	if n := tool.CallsFor(wire.OpKey); n != 1 {
		t.Fatalf("the approved write ran %d times, want exactly 1", n)
	}

	// An edit is a new action with new hashes and needs its own decision.
	s, _ := structpb.NewStruct(map[string]any{"amount": 99})
	edit, err := agent.tasks.ProposeAction(ctx, connect.NewRequest(&stewardv1.ProposeActionRequest{
		TaskId: taskID, ProposalId: "wire-1-edit", Tool: "wire", Target: "acct:42", Params: s, EditOf: wire.ActionId, Rationale: argued,
	}))
	if err != nil {
		t.Fatal(err)
	}
	e := edit.Msg.Action
	if e.ActionId == wire.ActionId || e.ActionHash == wire.ActionHash || e.RequestHash == wire.RequestHash || e.OpKey == wire.OpKey || e.EditOf != wire.ActionId {
		t.Fatalf("the edit did not get identities of its own: %v", e)
	}
	waitAction(t, agent.clients, taskID, e.ActionId, stewardv1.ActionStatus_ACTION_STATUS_AWAITING_APPROVAL)

	// Editing an action that waits for approval withdraws it, so nobody
	// approves the old version by mistake.
	s2, _ := structpb.NewStruct(map[string]any{"amount": 98})
	edit2, err := agent.tasks.ProposeAction(ctx, connect.NewRequest(&stewardv1.ProposeActionRequest{
		TaskId: taskID, ProposalId: "wire-1-edit-2", Tool: "wire", Target: "acct:42", Params: s2, EditOf: e.ActionId, Rationale: argued,
	}))
	if err != nil {
		t.Fatal(err)
	}
	_, old := waitAction(t, agent.clients, taskID, e.ActionId, stewardv1.ActionStatus_ACTION_STATUS_WITHDRAWN)
	if !old.Approval.GetWithdrawn() {
		t.Fatalf("the withdrawn action's approval is not closed: %v", old.Approval)
	}
	_, err = approver.governance.DecideApproval(ctx, connect.NewRequest(&stewardv1.DecideApprovalRequest{
		ApprovalId: old.Approval.ApprovalId, ActionHash: old.ActionHash, Decision: stewardv1.ApprovalDecision_APPROVAL_DECISION_APPROVE,
	}))
	if connect.CodeOf(err) != connect.CodeFailedPrecondition {
		t.Fatalf("approving a withdrawn action: %v, want failed_precondition", err)
	}
	waitAction(t, agent.clients, taskID, edit2.Msg.Action.ActionId, stewardv1.ActionStatus_ACTION_STATUS_AWAITING_APPROVAL)
	pending, err := approver.governance.ListApprovals(ctx, connect.NewRequest(&stewardv1.ListApprovalsRequest{TaskId: taskID, PendingOnly: true}))
	if err != nil {
		t.Fatal(err)
	}
	if len(pending.Msg.Approvals) != 1 || pending.Msg.Approvals[0].ActionId != edit2.Msg.Action.ActionId {
		t.Fatalf("pending approvals after the edit: %v", pending.Msg.Approvals)
	}

	// The timeline tells the story.
	tl, err := agent.query.GetTimeline(ctx, connect.NewRequest(&stewardv1.GetTimelineRequest{TaskId: taskID}))
	if err != nil {
		t.Fatal(err)
	}
	var story []string
	for _, e := range tl.Msg.Entries {
		story = append(story, e.Summary)
	}
	for _, want := range []string{"proposed action " + wire.ActionId, "user:bo approved action " + wire.ActionId, "Action " + wire.ActionId + " succeeded", "said require approval"} {
		if !strings.Contains(strings.Join(story, "\n"), want) {
			t.Errorf("the timeline does not say %q:\n%s", want, strings.Join(story, "\n"))
		}
	}

	// The whole history still verifies.
	v, err := agent.audit.VerifyTask(ctx, connect.NewRequest(&stewardv1.VerifyTaskRequest{TaskId: taskID}))
	if err != nil || !v.Msg.Ok {
		t.Fatalf("verify: %v %v", v, err)
	}
}

// TestProposalBadInput: unknown tool, tool the contract does not allow,
// parameters failing the schema, a task that is not running, approvals
// that do not exist — each a clear error naming the problem, and nothing
// half-done on the log.
func TestProposalBadInput(t *testing.T) {
	tool := stewardtest.StartTool(t)
	h := startSteward(t, setup{tools: governedTools(tool)})
	agent, approver := h.agent, h.approver
	ctx := context.Background()
	taskID := governedTask(t, agent, "bad-1")

	k := contract() // allows only "search"
	narrow, err := agent.tasks.CreateTask(ctx, connect.NewRequest(&stewardv1.CreateTaskRequest{RequestId: "narrow", Contract: k}))
	if err != nil {
		t.Fatal(err)
	}
	narrowID := narrow.Msg.Task.Contract.TaskId
	waitStatus(t, agent.clients, narrowID, stewardv1.TaskStatus_TASK_STATUS_RUNNING)
	paused := governedTask(t, agent, "bad-paused")
	if _, err := agent.tasks.PauseTask(ctx, connect.NewRequest(&stewardv1.PauseTaskRequest{TaskId: paused})); err != nil {
		t.Fatal(err)
	}
	before, err := agent.query.GetTask(ctx, connect.NewRequest(&stewardv1.GetTaskRequest{TaskId: taskID}))
	if err != nil {
		t.Fatal(err)
	}

	params := func(m map[string]any) *structpb.Struct { s, _ := structpb.NewStruct(m); return s }
	tests := []struct {
		name string
		req  *stewardv1.ProposeActionRequest
		code connect.Code
		says string
	}{
		{"unknown tool", &stewardv1.ProposeActionRequest{TaskId: taskID, Tool: "teleport", Params: params(nil)}, connect.CodeInvalidArgument, `tool: tool "teleport" is not registered`},
		{"unknown version", &stewardv1.ProposeActionRequest{TaskId: taskID, Tool: "search", ToolVersion: "9.9.9", Params: params(map[string]any{"q": "x"})}, connect.CodeInvalidArgument, "no version"},
		{"tool not allowed", &stewardv1.ProposeActionRequest{TaskId: narrowID, Tool: "wire", Params: params(map[string]any{"amount": 1})}, connect.CodeInvalidArgument, "not among the tools"},
		{"params fail the schema", &stewardv1.ProposeActionRequest{TaskId: taskID, Tool: "wire", Params: params(map[string]any{"amount": 0})}, connect.CodeInvalidArgument, "params/amount"},
		{"missing param", &stewardv1.ProposeActionRequest{TaskId: taskID, Tool: "search", Params: params(nil)}, connect.CodeInvalidArgument, "params"},
		{"task not running", &stewardv1.ProposeActionRequest{TaskId: paused, Tool: "search", Params: params(map[string]any{"q": "x"})}, connect.CodeFailedPrecondition, "paused"},
		{"unknown task", &stewardv1.ProposeActionRequest{TaskId: "nope", Tool: "search", Params: params(map[string]any{"q": "x"})}, connect.CodeNotFound, "not found"},
		{"no tool", &stewardv1.ProposeActionRequest{TaskId: taskID}, connect.CodeInvalidArgument, "tool"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := agent.tasks.ProposeAction(ctx, connect.NewRequest(tt.req))
			if connect.CodeOf(err) != tt.code || !strings.Contains(err.Error(), tt.says) {
				t.Fatalf("err = %v, want %v saying %q", err, tt.code, tt.says)
			}
		})
	}
	after, err := agent.query.GetTask(ctx, connect.NewRequest(&stewardv1.GetTaskRequest{TaskId: taskID}))
	if err != nil {
		t.Fatal(err)
	}
	if after.Msg.Task.EventCount != before.Msg.Task.EventCount {
		t.Fatalf("refused proposals appended %d events", after.Msg.Task.EventCount-before.Msg.Task.EventCount)
	}

	// The same proposal id with another request is refused; with the same
	// request it is the same action.
	a := propose(t, agent, taskID, "same", "search", map[string]any{"q": "one"})
	if b := propose(t, agent, taskID, "same", "search", map[string]any{"q": "one"}); b.ActionId != a.ActionId {
		t.Fatalf("a repeated proposal made a new action")
	}
	_, err = agent.tasks.ProposeAction(ctx, connect.NewRequest(&stewardv1.ProposeActionRequest{TaskId: taskID, ProposalId: "same", Tool: "search", Params: params(map[string]any{"q": "two"})}))
	if connect.CodeOf(err) != connect.CodeAlreadyExists {
		t.Fatalf("proposal id reused for another request: %v, want already_exists", err)
	}

	// With tokens on, registering a tool takes the tool-admin role.
	tools := stewardv1connect.NewToolServiceClient(&http.Client{}, h.url, connect.WithInterceptors(stewardtest.Bearer(agentToken)))
	_, err = tools.RegisterTool(ctx, connect.NewRequest(&stewardv1.RegisterToolRequest{Contract: &stewardv1.ToolContract{
		Name: "pay", Version: "9.0.0", EffectClass: stewardv1.EffectClass_EFFECT_CLASS_READ, DataSensitivity: stewardv1.DataSensitivity_DATA_SENSITIVITY_INTERNAL,
		Endpoint: &stewardv1.ToolContract_Http{Http: &stewardv1.HTTPEndpoint{Url: tool.URL}},
	}}))
	if connect.CodeOf(err) != connect.CodePermissionDenied {
		t.Fatalf("registering a tool without the role: %v, want permission_denied", err)
	}

	_, err = approver.governance.DecideApproval(ctx, connect.NewRequest(&stewardv1.DecideApprovalRequest{ApprovalId: "apv-nope", ActionHash: "x", Decision: stewardv1.ApprovalDecision_APPROVAL_DECISION_APPROVE}))
	if connect.CodeOf(err) != connect.CodeNotFound {
		t.Fatalf("unknown approval: %v, want not_found", err)
	}
	_, err = approver.governance.DecideApproval(ctx, connect.NewRequest(&stewardv1.DecideApprovalRequest{ApprovalId: "apv-nope", ActionHash: "x"}))
	if connect.CodeOf(err) != connect.CodeInvalidArgument {
		t.Fatalf("decision without a decision: %v, want invalid_argument", err)
	}
}
