package task_test

import (
	"strings"
	"testing"

	"github.com/steward-run/steward/pkg/errs"
	"github.com/steward-run/steward/pkg/event"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/stewardtest"
	"github.com/steward-run/steward/pkg/task"
)

func planSubmitted(version uint32, hash string) *stewardv1.PlanSubmitted {
	return &stewardv1.PlanSubmitted{Plan: &stewardv1.Plan{Version: version}, PlanHash: hash}
}

func planJudged(version uint32, hash string, d stewardv1.PolicyDecision, approvalID string) *stewardv1.PlanEvaluated {
	return &stewardv1.PlanEvaluated{Version: version, PlanHash: hash, Snapshot: &stewardv1.PolicySnapshot{SnapshotId: "s-" + hash + approvalID, Decision: d}, ApprovalId: approvalID}
}

func planApproval(version uint32, hash string) *stewardv1.ApprovalRequested {
	return &stewardv1.ApprovalRequested{Approval: &stewardv1.Approval{ApprovalId: "ap-" + hash, PlanVersion: version, PlanHash: hash, RequiredRoles: []string{"authorizer"}}}
}

func planVote(hash, who string, d stewardv1.ApprovalDecision) *stewardv1.ApprovalDecided {
	return &stewardv1.ApprovalDecided{ApprovalId: "ap-" + hash, PlanHash: hash, Decision: d, DecidedBy: who}
}

const (
	allowPlan   = stewardv1.PolicyDecision_POLICY_DECISION_ALLOW
	askPlan     = stewardv1.PolicyDecision_POLICY_DECISION_REQUIRE_APPROVAL
	denyPlan    = stewardv1.PolicyDecision_POLICY_DECISION_DENY
	approvedBy  = "user:di"
	planHashOne = "h1"
)

// TestPlanPolicyGate: when the latest plan version may start, and when it
// never will, as folded from governance's evaluations and the version's
// approval.
func TestPlanPolicyGate(t *testing.T) {
	tests := []struct {
		name    string
		events  []event.Payload
		start   bool
		refused string
	}{
		{"not judged yet", nil, false, ""},
		{"allowed", []event.Payload{planJudged(1, planHashOne, allowPlan, "")}, true, ""},
		{"denied", []event.Payload{planJudged(1, planHashOne, denyPlan, "")}, false, "policy denied the plan"},
		{"awaiting approval", []event.Payload{planJudged(1, planHashOne, askPlan, ""), planApproval(1, planHashOne)}, false, ""},
		{"approved, not yet verified", []event.Payload{planJudged(1, planHashOne, askPlan, ""), planApproval(1, planHashOne),
			planVote(planHashOne, approvedBy, approveVote)}, false, ""},
		{"approved and verified", []event.Payload{planJudged(1, planHashOne, askPlan, ""), planApproval(1, planHashOne),
			planVote(planHashOne, approvedBy, approveVote), planJudged(1, planHashOne, askPlan, "ap-h1")}, true, ""},
		{"approved, then policy changed", []event.Payload{planJudged(1, planHashOne, askPlan, ""), planApproval(1, planHashOne),
			planVote(planHashOne, approvedBy, approveVote), planJudged(1, planHashOne, denyPlan, "ap-h1")}, false, "policy denied the plan"},
		{"rejected", []event.Payload{planJudged(1, planHashOne, askPlan, ""), planApproval(1, planHashOne),
			planVote(planHashOne, approvedBy, rejectVote)}, false, "the plan was rejected by user:di"},
		{"an allowed version revised", []event.Payload{planJudged(1, planHashOne, allowPlan, ""), planSubmitted(2, "h2")}, false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := append([]event.Payload{created(), started(), planSubmitted(1, planHashOne)}, tt.events...)
			tk, err := task.Fold(stewardtest.History(t, "t1", h...))
			if err != nil {
				t.Fatal(err)
			}
			if got := task.PlanMayStart(tk); got != tt.start {
				t.Errorf("PlanMayStart = %v, want %v (%v)", got, tt.start, tk.PlanPolicy)
			}
			if got := task.PlanRefused(tk); !strings.HasPrefix(got, tt.refused) || (tt.refused == "") != (got == "") {
				t.Errorf("PlanRefused = %q, want %q", got, tt.refused)
			}
		})
	}
}

// TestPlanPolicyRefusals: what the fold refuses of a plan's judgement.
func TestPlanPolicyRefusals(t *testing.T) {
	asked := []event.Payload{planJudged(1, planHashOne, askPlan, ""), planApproval(1, planHashOne)}
	approved := append(append([]event.Payload{}, asked...), planVote(planHashOne, approvedBy, approveVote))
	tests := []struct {
		name   string
		events []event.Payload
		want   string
	}{
		{"an older version", []event.Payload{planSubmitted(1, "h0")}, "does not follow version 1"},
		{"a version without a hash", []event.Payload{planSubmitted(2, "")}, "has no hash"},
		{"an evaluation of another hash", []event.Payload{planJudged(1, "h0", allowPlan, "")}, "is not its latest"},
		{"an evaluation without a snapshot", []event.Payload{&stewardv1.PlanEvaluated{Version: 1, PlanHash: planHashOne}}, "has no snapshot"},
		{"a second evaluation", []event.Payload{planJudged(1, planHashOne, denyPlan, ""), planJudged(1, planHashOne, allowPlan, "")}, "was evaluated already"},
		{"an evaluation naming an approval not given", append(asked, planJudged(1, planHashOne, allowPlan, "ap-h1")), "is not the approved approval"},
		{"an evaluation naming an approval when none was asked", []event.Payload{planJudged(1, planHashOne, allowPlan, ""), planJudged(1, planHashOne, allowPlan, "ap-h1")}, "awaits no approval"},
		{"a third evaluation", append(approved, planJudged(1, planHashOne, askPlan, "ap-h1"), planJudged(1, planHashOne, allowPlan, "ap-h1")), "awaits no approval"},
		{"an approval policy did not ask for", []event.Payload{planJudged(1, planHashOne, allowPlan, ""), planApproval(1, planHashOne)}, "asks no approval"},
		{"an approval of an old version", []event.Payload{planJudged(1, planHashOne, askPlan, ""), planSubmitted(2, "h2"), planJudged(2, "h2", askPlan, ""), planApproval(1, planHashOne)}, "is not its latest"},
		{"a second approval", append(asked, planApproval(1, planHashOne)), "has an approval already"},
		{"a vote on a closed approval", append(asked, planSubmitted(2, "h2"), planVote(planHashOne, approvedBy, approveVote)), "is not the open approval"},
		{"a vote for another hash", append(asked, &stewardv1.ApprovalDecided{ApprovalId: "ap-h1", PlanHash: "h2", Decision: approveVote, DecidedBy: approvedBy}), "is for plan hash h2"},
		{"a second vote", append(approved, planVote(planHashOne, "user:bo", approveVote)), "already decided"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := append([]event.Payload{created(), started(), planSubmitted(1, planHashOne)}, tt.events...)
			_, err := task.Fold(stewardtest.History(t, "t1", h...))
			if !errs.Is(err, errs.FailedPrecondition) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("fold = %v, want a refusal saying %q", err, tt.want)
			}
		})
	}
}
