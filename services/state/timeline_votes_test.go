package state_test

import (
	"testing"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/stewardtest"
	"github.com/steward-run/steward/services/state"
)

// TestTimelineCountsTheVotesOfAnApprovalOfSeveral: where an approval
// needs two people, the first one's vote reads as one of two, not as the
// decision; where one decides, the vote reads as before.
func TestTimelineCountsTheVotesOfAnApprovalOfSeveral(t *testing.T) {
	approve := stewardv1.ApprovalDecision_APPROVAL_DECISION_APPROVE
	h := append(running(),
		&stewardv1.ActionProposed{Action: &stewardv1.Action{ActionId: "a1", ProposalId: "p1", Tool: "wire", ToolVersion: "1.0.0", Target: "acct:7", ActionHash: "h-a1", RequestHash: "r-a1"}},
		&stewardv1.PolicyEvaluated{ActionId: "a1", Snapshot: &stewardv1.PolicySnapshot{SnapshotId: "s1", Decision: stewardv1.PolicyDecision_POLICY_DECISION_REQUIRE_APPROVAL, RequiredApprovals: 2}},
		&stewardv1.ApprovalRequested{Approval: &stewardv1.Approval{ApprovalId: "ap1", ActionId: "a1", ActionHash: "h-a1", RequiredRoles: []string{"treasury"}, RequiredApprovals: 2}},
		&stewardv1.ApprovalDecided{ApprovalId: "ap1", ActionId: "a1", ActionHash: "h-a1", Decision: approve, DecidedBy: "user:bo"},
		&stewardv1.ApprovalDecided{ApprovalId: "ap1", ActionId: "a1", ActionHash: "h-a1", Decision: approve, DecidedBy: "user:cy", Comment: "fine"},
		&stewardv1.ActionProposed{Action: &stewardv1.Action{ActionId: "a2", ProposalId: "p2", Tool: "wire", ToolVersion: "1.0.0", Target: "acct:8", ActionHash: "h-a2", RequestHash: "r-a2"}},
		&stewardv1.PolicyEvaluated{ActionId: "a2", Snapshot: &stewardv1.PolicySnapshot{SnapshotId: "s2", Decision: stewardv1.PolicyDecision_POLICY_DECISION_REQUIRE_APPROVAL}},
		&stewardv1.ApprovalRequested{Approval: &stewardv1.Approval{ApprovalId: "ap2", ActionId: "a2", ActionHash: "h-a2", RequiredRoles: []string{"treasury"}}},
		&stewardv1.ApprovalDecided{ApprovalId: "ap2", ActionId: "a2", ActionHash: "h-a2", Decision: approve, DecidedBy: "user:bo"},
	)
	entries := state.Timeline(stewardtest.History(t, "t1", h...))
	n := len(running())
	for i, want := range map[int]string{
		n + 3: "user:bo approved action a1 (1 of 2 approvals; hash h-a1…)",
		n + 4: "user:cy approved action a1 (2 of 2 approvals; hash h-a1…): fine",
		n + 8: "user:bo approved action a2 (hash h-a2…)",
	} {
		if got := entries[i].Summary; got != want {
			t.Errorf("entry %d: %q, want %q", i, got, want)
		}
	}
}
