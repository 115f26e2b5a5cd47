package state_test

import (
	"testing"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/stewardtest"
	"github.com/steward-run/steward/services/state"
)

// TestTimelineTellsAmendmentsAndAPersonsWork: an amendment reads as one,
// naming the action that replaces it, whose proposal names what it
// amends; a person's execution reads as approved without a permit, and
// its settlement as that person's word, with the evidence — not as the
// settlement of an unknown outcome.
func TestTimelineTellsAmendmentsAndAPersonsWork(t *testing.T) {
	wire := func(id, amends string) *stewardv1.ActionProposed {
		return &stewardv1.ActionProposed{Action: &stewardv1.Action{ActionId: id, ProposalId: "p-" + id, Tool: "wire", ToolVersion: "1.0.0", Target: "acct:7",
			ActionHash: "h-" + id, RequestHash: "r-" + id, AmendmentOf: amends}}
	}
	evaluated := func(id string) *stewardv1.PolicyEvaluated {
		return &stewardv1.PolicyEvaluated{ActionId: id, Snapshot: &stewardv1.PolicySnapshot{SnapshotId: "s-" + id, Decision: stewardv1.PolicyDecision_POLICY_DECISION_REQUIRE_APPROVAL}}
	}
	requested := func(id string) *stewardv1.ApprovalRequested {
		return &stewardv1.ApprovalRequested{Approval: &stewardv1.Approval{ApprovalId: "ap-" + id, ActionId: id, ActionHash: "h-" + id, RequiredRoles: []string{"treasury"}}}
	}
	h := append(running(),
		wire("a1", ""), evaluated("a1"), requested("a1"),
		&stewardv1.ApprovalDecided{ApprovalId: "ap-a1", ActionId: "a1", ActionHash: "h-a1", Decision: stewardv1.ApprovalDecision_APPROVAL_DECISION_AMEND,
			DecidedBy: "user:bo", Comment: "the invoice says 50", AmendedParamsJson: `{"amount":50}`, AmendedActionId: "a2"},
		wire("a2", "a1"), evaluated("a2"), requested("a2"),
		&stewardv1.ApprovalDecided{ApprovalId: "ap-a2", ActionId: "a2", ActionHash: "h-a2", Decision: stewardv1.ApprovalDecision_APPROVAL_DECISION_PERSON_EXECUTES, DecidedBy: "user:di"},
		&stewardv1.ActionSettled{ActionId: "a2", State: stewardv1.SettleState_SETTLE_STATE_SUCCEEDED, SettledBy: "user:di", Reason: "sent by hand", Evidence: []string{"ticket:7"}},
	)
	entries := state.Timeline(stewardtest.History(t, "t1", h...))
	n := len(running())
	for i, want := range map[int]string{
		n + 3: "user:bo amended action a1 (hash h-a1…): replaced by action a2: the invoice says 50",
		n + 4: "test via control proposed action a2: wire 1.0.0 on \"acct:7\" (unspecified), the amendment of a1",
		n + 7: "user:di approved, for a person to execute (no permit), action a2 (hash h-a2…)",
		n + 8: "user:di, who was to execute action a2, says it is done; evidence: ticket:7: sent by hand",
	} {
		if got := entries[i].Summary; got != want {
			t.Errorf("entry %d: %q, want %q", i, got, want)
		}
	}
}
