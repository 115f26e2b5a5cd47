package governance_test

import (
	"context"
	"testing"

	"github.com/steward-run/steward/pkg/eventlog"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/services/governance"
)

// TestAStallMarkRedrivesAnApprovedPlan (review 26b): the plan analogue of
// "an approval governance never acted on". A plan version's approval is
// decided (signed, as Decide signs it) while governance's reaction to the
// decision is lost: the plan stays AWAITING_APPROVAL with an approved
// approval, and nothing lets it start. A stall mark should make
// governance judge it after its approval (afterPlanDecision), as
// redriveApproved does for an action. It does not: PlanUnjudged is false
// for an approval that exists, and redrive has no case for it.
func TestAStallMarkRedrivesAnApprovedPlan(t *testing.T) {
	e := newHarness(t)
	ctx := context.Background()
	e.start(t)
	e.create(t, "p", "user:ana", planContract())
	hash := e.submitPlan(t, "p", 1, wires...)
	ap := e.judged("p", hash, awaitingApproval).Plan.Approval
	e.Settle(governance.PlaneName)
	e.plane.Stop()

	sub, err := e.Log.React(ctx, governance.PlaneName, eventlog.OnRecord[*stewardv1.ApprovalDecided](ignore))
	if err != nil {
		t.Fatal(err)
	}
	d := &stewardv1.ApprovalDecided{ApprovalId: ap.ApprovalId, PlanHash: hash,
		Decision: stewardv1.ApprovalDecision_APPROVAL_DECISION_APPROVE, DecidedBy: "user:di"}
	if d.Signed, err = e.signer.SignDecision(d); err != nil {
		t.Fatal(err)
	}
	e.Append("p", d)
	e.Settle(governance.PlaneName)
	sub.Stop()

	e.start(t)
	e.Settle(governance.PlaneName)
	tk := e.WaitTask("p", func(*stewardv1.Task) bool { return true })
	if tk.Plan.Governance != stewardv1.PlanGovernance_PLAN_GOVERNANCE_AWAITING_APPROVAL ||
		tk.Plan.Approval.GetDecision() != stewardv1.ApprovalDecision_APPROVAL_DECISION_APPROVE {
		t.Fatalf("the fault did not strand the approved plan: %v, approval %v", tk.Plan.Governance, tk.Plan.Approval.GetDecision())
	}
	e.Append("p", &stewardv1.TaskStalled{Reason: "test: quiet"})
	e.judged("p", hash, approvedOrNot) // fails after 30 s: never re-driven
}
