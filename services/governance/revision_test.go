package governance_test

import (
	"testing"

	"google.golang.org/protobuf/proto"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/stewardtest"
	"github.com/steward-run/steward/pkg/task"
)

// TestRevisionJudgedByPolicy: governance judges each proposed revision of
// a contract with the default bundle's revision rule (real OPA) and
// records it: a LOW task's revision is the owner's alone, so the owner's
// proposal takes effect at the evaluation; a HIGH task's needs an
// authorizer too and stays open; one that drops a HIGH task's criterion is
// denied, and closes rejected.
func TestRevisionJudgedByPolicy(t *testing.T) {
	e := newHarness(t)
	e.start(t)
	cases := []struct {
		name     string
		tier     stewardv1.RiskTier
		criteria int // the revision's, of the task's two
		want     stewardv1.PolicyDecision
		state    stewardv1.ContractRevisionState
	}{
		{"low", stewardv1.RiskTier_RISK_TIER_LOW, 2, stewardv1.PolicyDecision_POLICY_DECISION_ALLOW, stewardv1.ContractRevisionState_CONTRACT_REVISION_STATE_APPROVED},
		{"high", stewardv1.RiskTier_RISK_TIER_HIGH, 2, stewardv1.PolicyDecision_POLICY_DECISION_REQUIRE_APPROVAL, stewardv1.ContractRevisionState_CONTRACT_REVISION_STATE_OPEN},
		{"high-drops", stewardv1.RiskTier_RISK_TIER_HIGH, 1, stewardv1.PolicyDecision_POLICY_DECISION_DENY, stewardv1.ContractRevisionState_CONTRACT_REVISION_STATE_REJECTED},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			id := "task-rev-" + c.name
			k := credContract([]string{"search"}, nil)
			k.RiskTier, k.AccountableOwnerRef = c.tier, stewardtest.Principal // the owner proposes
			k.AcceptanceCriteria = []*stewardv1.AcceptanceCriterion{{Id: "a", Expression: "true"}, {Id: "b", Expression: "true"}}
			e.create(t, id, "agent", k)
			revised := proto.CloneOf(k)
			revised.Intent = "pay twice"
			revised.AcceptanceCriteria = revised.AcceptanceCriteria[:c.criteria]
			hash, err := task.ContractHash(revised)
			if err != nil {
				t.Fatal(err)
			}
			e.Append(id, &stewardv1.ContractRevisionProposed{RevisionId: "rev-1", Version: 2, ContractHash: hash, Contract: revised, Reason: "more", ProposedBy: stewardtest.Principal})
			tk := e.WaitTask(id, func(tk *stewardv1.Task) bool { return tk.ContractRevisions[0].Snapshot != nil })
			r := tk.ContractRevisions[0]
			if r.Snapshot.Decision != c.want || r.State != c.state || r.Snapshot.BundleRevision == "" || r.Snapshot.InputHash == "" {
				t.Fatalf("judged %v, now %v; want %v, %v", r.Snapshot, r.State, c.want, c.state)
			}
			if c.want == stewardv1.PolicyDecision_POLICY_DECISION_REQUIRE_APPROVAL && r.Snapshot.RequiredApproverRoles[0] != "authorizer" {
				t.Errorf("roles %v, want authorizer", r.Snapshot.RequiredApproverRoles)
			}
			if approved := c.state == stewardv1.ContractRevisionState_CONTRACT_REVISION_STATE_APPROVED; approved != (tk.ContractVersion == 2) {
				t.Errorf("version %d in force with the revision %v", tk.ContractVersion, r.State)
			}
		})
	}
}
