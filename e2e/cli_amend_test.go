package e2e_test

import (
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"

	"github.com/steward-run/steward/pkg/event"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/stewardtest"
)

// TestCLIAmend amends and executes with `steward approvals` as approvers
// would. `approvals show` offers amend; amended parameters the tool's
// schema refuses are refused, exiting 4 and naming the field, and record
// nothing; `approvals amend --params FILE` records the approver's
// ApprovalDecided (amend, the canonical parameters, the amended action's
// id), and run again decides nothing more; the amended action, proposed in
// the approver's name, is approved by another with `approvals approve` and
// runs once, the original never. `approvals approve --by-person` records a
// person-executes decision and no permit; `actions settle --evidence` by
// that person records the ActionSettled with the evidence.
func TestCLIAmend(t *testing.T) {
	tool := stewardtest.StartTool(t)
	h := startSteward(t, setup{tools: governedTools(tool)})
	bo, di := newPerson(t, h.url, approverToken), newPerson(t, h.url, secondApproverToken)
	audit := withToken(h.url, adminToken).clients
	taskID := openTask(t, h.agent, "cli-amend-1")
	wire := propose(t, h.agent, taskID, "wire-1", "wire", map[string]any{"amount": 500})
	_, wire = waitAction(t, h.agent.clients, taskID, wire.ActionId, stewardv1.ActionStatus_ACTION_STATUS_AWAITING_APPROVAL)
	apID := wire.Approval.ApprovalId

	if out, _ := bo.run(0, "approvals", "show", apID); !strings.Contains(out, "steward approvals amend "+apID+" --hash "+wire.ActionHash+" --params JSON") {
		t.Errorf("approvals show does not offer amend:\n%s", out)
	}
	if _, stderr := bo.run(4, "approvals", "amend", apID, "--hash", wire.ActionHash, "--params", `{"amount": 0}`); !strings.Contains(stderr, "invalid_argument") || !strings.Contains(stderr, "amended_params/amount") {
		t.Errorf("amending to what the schema refuses:\n%s", stderr)
	}
	if _, stderr := bo.run(2, "approvals", "amend", apID, "--hash", wire.ActionHash); !strings.Contains(stderr, "--params is required") {
		t.Errorf("amend without --params:\n%s", stderr)
	}
	if n := countType(replayTask(t, audit, taskID), event.TypeApprovalDecided); n != 0 {
		t.Fatalf("refused amendments recorded %d decisions", n)
	}

	params := writeFile(t, t.TempDir(), "params.json", `{"amount": 50}`)
	var amendedID string
	for range 2 { // run again, as after a timeout
		out, _ := bo.run(0, "approvals", "amend", apID, "--hash", wire.ActionHash, "--params", params, "--comment", "50 is the invoice", "-o", "json")
		var ap stewardv1.Approval
		if err := protojson.Unmarshal([]byte(out), &ap); err != nil || ap.Decision != stewardv1.ApprovalDecision_APPROVAL_DECISION_AMEND || ap.AmendedActionId == "" {
			t.Fatalf("approvals amend -o json: %v\n%s", err, out)
		}
		amendedID = ap.AmendedActionId
	}
	if n := countType(replayTask(t, audit, taskID), event.TypeApprovalDecided); n != 1 {
		t.Fatalf("amending twice recorded %d decisions, want 1", n)
	}
	d := lastOfType(t, h, taskID, event.TypeApprovalDecided).GetApprovalDecided()
	if d.Decision != stewardv1.ApprovalDecision_APPROVAL_DECISION_AMEND || d.DecidedBy != "user:bo" || d.AmendedParamsJson != `{"amount":50}` ||
		d.AmendedActionId != amendedID || d.Comment != "50 is the invoice" || d.ActionHash != wire.ActionHash {
		t.Fatalf("the amendment on the log: %v", d)
	}
	p := lastOfType(t, h, taskID, event.TypeActionProposed)
	if a := p.GetActionProposed().GetAction(); a.ActionId != amendedID || a.AmendmentOf != wire.ActionId || p.Actor.GetPrincipal() != "user:bo" {
		t.Fatalf("the amended proposal on the log: %v", p)
	}

	_, amended := waitAction(t, h.agent.clients, taskID, amendedID, stewardv1.ActionStatus_ACTION_STATUS_AWAITING_APPROVAL)
	if _, stderr := bo.run(4, "approvals", "approve", amended.Approval.ApprovalId, "--hash", amended.ActionHash); !strings.Contains(stderr, "permission_denied") {
		t.Errorf("the amender approving the amendment:\n%s", stderr)
	}
	di.run(0, "approvals", "approve", amended.Approval.ApprovalId, "--hash", amended.ActionHash)
	waitAction(t, h.agent.clients, taskID, amendedID, stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED)
	if tool.CallsFor(amended.OpKey) != 1 || tool.CallsFor(wire.OpKey) != 0 {
		t.Fatalf("the amended wire ran %d times, the original %d", tool.CallsFor(amended.OpKey), tool.CallsFor(wire.OpKey))
	}

	// A person executes the next wire.
	next := propose(t, h.agent, taskID, "wire-2", "wire", map[string]any{"amount": 7})
	_, next = waitAction(t, h.agent.clients, taskID, next.ActionId, stewardv1.ActionStatus_ACTION_STATUS_AWAITING_APPROVAL)
	out, _ := bo.run(0, "approvals", "approve", next.Approval.ApprovalId, "--hash", next.ActionHash, "--by-person")
	if !strings.Contains(out, "approved, by a person") || !strings.Contains(out, "steward actions settle "+taskID+" "+next.ActionId) {
		t.Errorf("approve --by-person printed:\n%s", out)
	}
	if d := lastOfType(t, h, taskID, event.TypeApprovalDecided).GetApprovalDecided(); d.ActionId != next.ActionId || d.Decision != stewardv1.ApprovalDecision_APPROVAL_DECISION_PERSON_EXECUTES || d.DecidedBy != "user:bo" {
		t.Fatalf("the person-executes decision on the log: %v", d)
	}
	waitAction(t, h.agent.clients, taskID, next.ActionId, stewardv1.ActionStatus_ACTION_STATUS_PERSON_EXECUTING)
	if _, stderr := di.run(4, "actions", "settle", taskID, next.ActionId, "--state", "succeeded", "--reason", "I did it", "--evidence", "ticket:9"); !strings.Contains(stderr, "permission_denied") {
		t.Errorf("another settling a person's execution:\n%s", stderr)
	}
	bo.run(0, "actions", "settle", taskID, next.ActionId, "--state", "succeeded", "--reason", "sent from the bank's portal", "--evidence", "ticket:OPS-7", "--evidence", "https://bank.example/tx/7")
	s := lastOfType(t, h, taskID, event.TypeActionSettled).GetActionSettled()
	if s.ActionId != next.ActionId || s.SettledBy != "user:bo" || strings.Join(s.Evidence, " ") != "ticket:OPS-7 https://bank.example/tx/7" {
		t.Fatalf("the settlement on the log: %v", s)
	}
	if n := countType(replayTask(t, audit, taskID), event.TypeActionPermitted); n != 1 || tool.CallsTo("/wire") != 1 {
		t.Fatalf("%d permits and %d wire calls, want the amended wire's only", n, tool.CallsTo("/wire"))
	}
}
