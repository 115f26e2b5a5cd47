package auditbundle

import (
	"testing"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/task"
)

// TestPlanHeldAfterItsApprovalReevaluatesTheSame: governance denies a
// plan whose approval policy no longer supports, with a first reason
// saying why (services/governance afterPlanDecision); re-evaluating it
// gives policy's decision, and the snapshot is recognised as that hold —
// checked against the approval's terms, so a hold that policy's decision
// does not explain, or a reason that says something else, still fails.
func TestPlanHeldAfterItsApprovalReevaluatesTheSame(t *testing.T) {
	ap := &stewardv1.Approval{ApprovalId: "ap1", PlanHash: "ph", RequiredRoles: []string{"authorizer"}}
	deny := stewardv1.PolicyDecision_POLICY_DECISION_DENY
	held := func(why string, rest ...string) *stewardv1.PolicySnapshot {
		return &stewardv1.PolicySnapshot{BundleRevision: "rev-2", Decision: deny, Reasons: append([]string{task.PlanChangedReason(why)}, rest...), RequiredApproverRoles: []string{"finance"}}
	}
	asksFinance := Decision{Decision: "require_approval", RequiredApproverRoles: []string{"finance"}, Reasons: []string{"plans need finance"}, Revision: "rev-2"}
	for _, tc := range []struct {
		name string
		got  Decision
		snap *stewardv1.PolicySnapshot
		ap   *stewardv1.Approval
		ok   bool
	}{
		{"other roles now", asksFinance, held("it now asks for approval by finance, not authorizer", "plans need finance"), ap, true},
		{"the bundle replaced meanwhile", asksFinance, held("the bundle was replaced after this check", "plans need finance"), ap, true},
		{"policy denies now", Decision{Decision: "deny", Reasons: []string{"no"}, RequiredApproverRoles: []string{"finance"}, Revision: "rev-2"}, held("it now denies the plan", "no"), ap, true},
		{"policy still supports the approval", Decision{Decision: "require_approval", RequiredApproverRoles: []string{"authorizer"}, Reasons: []string{"plans need finance"}, Revision: "rev-2"},
			&stewardv1.PolicySnapshot{BundleRevision: "rev-2", Decision: deny, Reasons: []string{task.PlanChangedReason("it now asks for approval by finance, not authorizer"), "plans need finance"}, RequiredApproverRoles: []string{"authorizer"}}, ap, false},
		{"a hold that gives another reason", asksFinance, held("it now asks for 3 approvals, not 1", "plans need finance"), ap, false},
		{"no approval it was decided on", asksFinance, held("it now asks for approval by finance, not authorizer", "plans need finance"), nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			why := sameDecision(tc.got, tc.snap, nil, tc.ap)
			if (why == "") != tc.ok {
				t.Errorf("sameDecision: %q, want ok %v", why, tc.ok)
			}
		})
	}
}
