package e2e_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"connectrpc.com/connect"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/stewardtest"
)

// TestPolicyChangeBetweenApprovalAndPermit edits the policy directory of a
// running Steward: it reloads without a restart, new snapshots carry the
// new revision, and an approval given after the change does not lead to a
// permit, because policy is evaluated again before every permit.
func TestPolicyChangeBetweenApprovalAndPermit(t *testing.T) {
	tool := stewardtest.StartTool(t)
	h := startSteward(t, setup{tools: governedTools(tool), policy: true})
	agent, approver := h.agent, h.approver
	taskID := governedTask(t, agent, "policy-1")

	wire := propose(t, agent, taskID, "wire-1", "wire", map[string]any{"amount": 5})
	_, waiting := waitAction(t, agent.clients, taskID, wire.ActionId, stewardv1.ActionStatus_ACTION_STATUS_AWAITING_APPROVAL)
	before := waiting.Snapshot.BundleRevision

	// Freeze wires. New snapshots carry the new revision once the plane
	// has reloaded.
	probes := 0
	h.reloadPolicy(t, "\ndeny_reasons contains \"wires are frozen for the audit\" if input.action.tool == \"wire\"\n", func() string {
		probes++
		read := propose(t, agent, taskID, fmt.Sprintf("probe-%d", probes), "search", map[string]any{"q": "x"})
		_, a := waitAction(t, agent.clients, taskID, read.ActionId, stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED)
		return a.Snapshot.BundleRevision
	})

	_, err := approver.governance.DecideApproval(context.Background(), connect.NewRequest(&stewardv1.DecideApprovalRequest{
		ApprovalId: waiting.Approval.ApprovalId, ActionHash: wire.ActionHash, Decision: stewardv1.ApprovalDecision_APPROVAL_DECISION_APPROVE,
	}))
	if err != nil {
		t.Fatal(err)
	}
	_, denied := waitAction(t, agent.clients, taskID, wire.ActionId, stewardv1.ActionStatus_ACTION_STATUS_DENIED)
	if denied.Permit != nil || !strings.Contains(denied.Outcome.GetReason(), "wires are frozen") || denied.Snapshot.BundleRevision == before {
		t.Fatalf("after the policy change: %v", denied)
	}
	if n := tool.CallsFor(wire.OpKey); n != 0 {
		t.Fatalf("the wire ran %d times under a policy that denies it", n)
	}
}
