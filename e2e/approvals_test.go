package e2e_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/stewardtest"
	"github.com/steward-run/steward/pkg/task"
)

// twoPeopleForWires is a policy directory holding the default bundle and
// one rule more: a wire needs two distinct approvers.
func twoPeopleForWires(t *testing.T) string {
	t.Helper()
	rego, err := os.ReadFile("../services/governance/policy/default/steward.rego")
	if err != nil {
		t.Fatal(err)
	}
	rule := "\n# Two people for every wire.\napprovals_needed contains 2 if tool_name == \"wire\"\n"
	return filepath.Dir(writeFile(t, filepath.Join(t.TempDir(), "policy"), "steward.rego", string(rego)+rule))
}

// TestApprovals runs the approval rules against the real binary, under a
// policy that asks two people for a wire: the approval shows the
// proposer's case; a repeated approver is refused and the permit follows
// the second distinct approval; the proposer may not approve its own
// action; and when the contract names an authorizer, an approval that
// would complete the count without them is refused.
func TestApprovals(t *testing.T) {
	tool := stewardtest.StartTool(t)
	h := startSteward(t, setup{tools: governedTools(tool), flags: []string{"--policy-dir", twoPeopleForWires(t)}})
	bo, di, eve := h.approver, withToken(h.url, secondApproverToken), withToken(h.url, thirdApproverToken)
	ctx := context.Background()

	create := func(t *testing.T, c authed, requestID, authorizer string) string {
		t.Helper()
		k := contract()
		k.AllowedTools, k.AuthorizerRef = []string{"search", "wire"}, authorizer
		resp, err := c.tasks.CreateTask(ctx, connect.NewRequest(&stewardv1.CreateTaskRequest{RequestId: requestID, Contract: k}))
		if err != nil {
			t.Fatal(err)
		}
		waitStarted(t, c.clients, resp.Msg.Task.Contract.TaskId)
		return resp.Msg.Task.Contract.TaskId
	}
	pending := func(t *testing.T, taskID string, wire *stewardv1.Action) *stewardv1.Approval {
		t.Helper()
		waitAction(t, h.agent.clients, taskID, wire.ActionId, stewardv1.ActionStatus_ACTION_STATUS_AWAITING_APPROVAL)
		list, err := bo.governance.ListApprovals(ctx, connect.NewRequest(&stewardv1.ListApprovalsRequest{TaskId: taskID, PendingOnly: true}))
		if err != nil {
			t.Fatal(err)
		}
		if len(list.Msg.Approvals) != 1 {
			t.Fatalf("pending approvals: %v", list.Msg.Approvals)
		}
		return list.Msg.Approvals[0]
	}
	decide := func(c authed, ap *stewardv1.Approval) (*stewardv1.Approval, error) {
		resp, err := c.governance.DecideApproval(ctx, connect.NewRequest(&stewardv1.DecideApprovalRequest{
			ApprovalId: ap.ApprovalId, ActionHash: ap.ActionHash, Decision: stewardv1.ApprovalDecision_APPROVAL_DECISION_APPROVE,
		}))
		if err != nil {
			return nil, err
		}
		return resp.Msg.Approval, nil
	}
	refused := wantCode

	t.Run("two distinct approvers, and what they see", func(t *testing.T) {
		taskID := create(t, h.agent, "two-people", "")
		wire := propose(t, h.agent, taskID, "wire-1", "wire", map[string]any{"amount": 120})
		ap := pending(t, taskID, wire)
		if r := ap.Rationale; ap.RequiredApprovals != 2 || r.GetExpectedImpact() != argued.ExpectedImpact ||
			r.GetRollbackPlan() != argued.RollbackPlan || !slices.Equal(r.GetAlternatives(), argued.Alternatives) || !slices.Equal(r.GetEvidence(), argued.Evidence) {
			t.Fatalf("the approval does not show the proposer's case, or the count: %v", ap)
		}
		got, err := bo.governance.GetApproval(ctx, connect.NewRequest(&stewardv1.GetApprovalRequest{ApprovalId: ap.ApprovalId}))
		if err != nil || !proto.Equal(got.Msg.Approval.Rationale, argued) {
			t.Fatalf("GetApproval: %v, %v; want the proposer's case", got, err)
		}

		first, err := decide(bo, ap)
		if err != nil {
			t.Fatal(err)
		}
		if first.Decision != stewardv1.ApprovalDecision_APPROVAL_DECISION_UNSPECIFIED || len(first.Votes) != 1 {
			t.Fatalf("one approval of two decided it: %v", first)
		}
		_, err = decide(bo, ap)
		refused(t, err, connect.CodeAlreadyExists, "user:bo", "1 of 2 approvals")
		if _, a := waitAction(t, h.agent.clients, taskID, wire.ActionId, stewardv1.ActionStatus_ACTION_STATUS_AWAITING_APPROVAL); a.Permit != nil || tool.CallsFor(wire.OpKey) != 0 {
			t.Fatalf("one approver of two let the wire go: %v", a)
		}

		second, err := decide(di, ap)
		if err != nil {
			t.Fatal(err)
		}
		if second.Decision != stewardv1.ApprovalDecision_APPROVAL_DECISION_APPROVE || second.DecidedBy != "user:di" {
			t.Fatalf("the second approval did not decide it: %v", second)
		}
		_, done := waitAction(t, h.agent.clients, taskID, wire.ActionId, stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED)
		if !slices.Equal(task.Approvers(done.Approval), []string{"user:bo", "user:di"}) || done.Permit.GetPermitId() == "" {
			t.Fatalf("the ledger does not name both approvers and the permit: %v", done)
		}
		if n := tool.CallsFor(wire.OpKey); n != 1 {
			t.Fatalf("the wire ran %d times, want 1", n)
		}
		// The receipt names both approvers.
		rc, err := h.agent.query.GetReceipt(ctx, connect.NewRequest(&stewardv1.GetReceiptRequest{TaskId: taskID}))
		if err != nil {
			t.Fatal(err)
		}
		if ap := rc.Msg.Receipt.GetApprovals(); len(ap) != 1 || ap[0].DecidedBy != "user:bo, user:di" || !strings.Contains(rc.Msg.Markdown, "user:bo, user:di") {
			t.Fatalf("the receipt's approvals %v do not name both approvers", ap)
		}
	})

	t.Run("the proposer may not approve", func(t *testing.T) {
		// user:bo holds the approver's role and does this task's work.
		taskID := create(t, bo, "own-work", "")
		wire := propose(t, bo, taskID, "wire-1", "wire", map[string]any{"amount": 5})
		ap := pending(t, taskID, wire)
		_, err := decide(bo, ap)
		refused(t, err, connect.CodePermissionDenied, "user:bo proposed action")
		for _, c := range []authed{di, eve} {
			if _, err := decide(c, ap); err != nil {
				t.Fatal(err)
			}
		}
		waitAction(t, h.agent.clients, taskID, wire.ActionId, stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED)
	})

	t.Run("the contract's authorizer must be among the approvers", func(t *testing.T) {
		taskID := create(t, h.agent, "named-authorizer", "user:bo")
		wire := propose(t, h.agent, taskID, "wire-1", "wire", map[string]any{"amount": 9})
		ap := pending(t, taskID, wire)
		if _, err := decide(di, ap); err != nil {
			t.Fatalf("a first approval by another approver: %v", err)
		}
		_, err := decide(eve, ap)
		refused(t, err, connect.CodePermissionDenied, "user:eve", "user:bo", "authorizer")
		if _, err := decide(bo, ap); err != nil {
			t.Fatal(err)
		}
		_, done := waitAction(t, h.agent.clients, taskID, wire.ActionId, stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED)
		if done.Approval.DecidedBy != "user:bo" {
			t.Fatalf("decided by %q, want the authorizer", done.Approval.DecidedBy)
		}
	})

	t.Run("a high-risk change without its case is denied", func(t *testing.T) {
		taskID := create(t, h.agent, "unargued", "")
		params, _ := structpb.NewStruct(map[string]any{"amount": 1})
		resp, err := h.agent.tasks.ProposeAction(ctx, connect.NewRequest(&stewardv1.ProposeActionRequest{
			TaskId: taskID, ProposalId: "wire-1", Tool: "wire", Target: "acct:42", Params: params,
			Rationale: &stewardv1.ActionRationale{ExpectedImpact: "moves 1"},
		}))
		if err != nil {
			t.Fatal(err)
		}
		_, a := waitAction(t, h.agent.clients, taskID, resp.Msg.Action.ActionId, stewardv1.ActionStatus_ACTION_STATUS_DENIED)
		if r := a.Outcome.GetReason(); !strings.Contains(r, "rationale.rollback_plan") || strings.Contains(r, "rationale.expected_impact") {
			t.Fatalf("denial %q, want it to name the missing rollback plan only", r)
		}
		_, err = h.agent.tasks.ProposeAction(ctx, connect.NewRequest(&stewardv1.ProposeActionRequest{
			TaskId: taskID, ProposalId: "wire-2", Tool: "wire", Params: params,
			Rationale: &stewardv1.ActionRationale{Evidence: []string{""}},
		}))
		refused(t, err, connect.CodeInvalidArgument, "rationale.evidence[0]")
	})
}
