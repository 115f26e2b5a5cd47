package e2e_test

import (
	"context"
	"strings"
	"testing"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/steward-run/steward/pkg/event"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/stewardtest"
)

// TestCLIApprovals decides with `steward approvals` as an approver would:
// ls and show find what waits and the hash to decide it by; after the
// agent changes the action, approving with the hash that was shown fails
// with a message naming it and records nothing; approving the action that
// waits now, by its own hash, records the approver's ApprovalDecided and
// the write runs once; a rejection is recorded as one.
func TestCLIApprovals(t *testing.T) {
	tool := stewardtest.StartTool(t)
	h := startSteward(t, setup{tools: governedTools(tool)})
	bo := newPerson(t, h.url, approverToken)
	taskID := governedTask(t, h.agent, "cli-approvals-1")
	wire := propose(t, h.agent, taskID, "wire-1", "wire", map[string]any{"amount": 100})
	_, wire = waitAction(t, h.agent.clients, taskID, wire.ActionId, stewardv1.ActionStatus_ACTION_STATUS_AWAITING_APPROVAL)
	shown := wire.Approval.ApprovalId

	out, _ := bo.run(0, "approvals", "ls", "--task", taskID, "-o", "json")
	var listed stewardv1.Approval
	if err := protojson.Unmarshal([]byte(strings.TrimSpace(out)), &listed); err != nil || listed.ApprovalId != shown {
		t.Fatalf("approvals ls -o json: one Approval line, %s, expected: %v\n%s", shown, err, out)
	}
	if out, _ := bo.run(0, "approvals", "ls"); !strings.Contains(out, shown) || !strings.Contains(out, "wire@1.0.0") || !strings.Contains(out, "pending") {
		t.Fatalf("approvals ls:\n%s", out)
	}
	out, _ = bo.run(0, "approvals", "show", shown)
	for _, want := range []string{"hash:          " + wire.ActionHash, `parameters:    {"amount":100}`, "steward approvals approve " + shown + " --hash " + wire.ActionHash} {
		if !strings.Contains(out, want) {
			t.Errorf("approvals show does not say %q:\n%s", want, out)
		}
	}

	// The agent changes the action while the approver looks at it.
	s, _ := structpb.NewStruct(map[string]any{"amount": 9000})
	edit, err := h.agent.tasks.ProposeAction(context.Background(), connect.NewRequest(&stewardv1.ProposeActionRequest{
		TaskId: taskID, ProposalId: "wire-1-edit", Tool: "wire", Target: "acct:42", Params: s, EditOf: wire.ActionId, Rationale: argued,
	}))
	if err != nil {
		t.Fatal(err)
	}
	_, changed := waitAction(t, h.agent.clients, taskID, edit.Msg.Action.ActionId, stewardv1.ActionStatus_ACTION_STATUS_AWAITING_APPROVAL)
	for _, id := range []string{shown, changed.Approval.ApprovalId} {
		_, stderr := bo.run(4, "approvals", "approve", id, "--hash", wire.ActionHash)
		if !strings.Contains(stderr, "approve "+id+" with hash "+wire.ActionHash) || !strings.Contains(stderr, "nothing was decided: the action changed since you saw that hash") {
			t.Errorf("approving %s with the stale hash does not say so clearly:\n%s", id, stderr)
		}
	}
	if n := countType(replayTask(t, withToken(h.url, adminToken).clients, taskID), event.TypeApprovalDecided); n != 0 {
		t.Fatalf("a stale hash recorded %d decisions", n)
	}

	out, _ = bo.run(0, "approvals", "approve", changed.Approval.ApprovalId, "--hash", changed.ActionHash, "--comment", "checked the amount", "-o", "json")
	var decided stewardv1.Approval
	if err := protojson.Unmarshal([]byte(out), &decided); err != nil || decided.Decision != stewardv1.ApprovalDecision_APPROVAL_DECISION_APPROVE {
		t.Fatalf("approvals approve -o json: %v\n%s", err, out)
	}
	d := lastOfType(t, h, taskID, event.TypeApprovalDecided).GetApprovalDecided()
	if d.ActionHash != changed.ActionHash || d.DecidedBy != "user:bo" || d.Comment != "checked the amount" || d.Decision != stewardv1.ApprovalDecision_APPROVAL_DECISION_APPROVE {
		t.Fatalf("the approval on the log: %v", d)
	}
	waitAction(t, h.agent.clients, taskID, changed.ActionId, stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED)
	if n := tool.CallsFor(changed.OpKey); n != 1 {
		t.Fatalf("the approved write ran %d times, want 1", n)
	}

	again := propose(t, h.agent, taskID, "wire-2", "wire", map[string]any{"amount": 5})
	_, again = waitAction(t, h.agent.clients, taskID, again.ActionId, stewardv1.ActionStatus_ACTION_STATUS_AWAITING_APPROVAL)
	if out, _ := bo.run(0, "approvals", "reject", again.Approval.ApprovalId, "--hash", again.ActionHash, "--comment", "not this week"); !strings.Contains(out, "rejected") {
		t.Errorf("approvals reject printed %q", out)
	}
	if d := lastOfType(t, h, taskID, event.TypeApprovalDecided).GetApprovalDecided(); d.ActionId != again.ActionId || d.Decision != stewardv1.ApprovalDecision_APPROVAL_DECISION_REJECT {
		t.Fatalf("the rejection on the log: %v", d)
	}
	if _, stderr := bo.run(2, "approvals", "approve", again.Approval.ApprovalId); !strings.Contains(stderr, "--hash is required") {
		t.Errorf("approve without --hash: %s", stderr)
	}
}
