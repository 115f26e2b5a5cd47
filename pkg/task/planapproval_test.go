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

// judgedAfter is governance's judgement of version after its approval.
func judgedAfter(version uint32, hash string, d stewardv1.PolicyDecision) event.Payload {
	return &stewardv1.PlanEvaluated{Version: version, PlanHash: hash, Snapshot: &stewardv1.PolicySnapshot{SnapshotId: "again", Decision: d}, ApprovalId: "ap-" + hash}
}

func planApprovalOf(version uint32, hash string) event.Payload {
	return &stewardv1.ApprovalRequested{Approval: &stewardv1.Approval{ApprovalId: "ap-" + hash, PlanVersion: version, PlanHash: hash, RequiredRoles: []string{"authorizer"}}}
}

func planVoteOf(hash, who string, d stewardv1.ApprovalDecision) event.Payload {
	return &stewardv1.ApprovalDecided{ApprovalId: "ap-" + hash, PlanHash: hash, Decision: d, DecidedBy: who}
}

// planAsked is a history whose plan version 1 (h1) awaits its approval.
func planAsked() []event.Payload {
	return []event.Payload{created(), started(), planSubmitted(planOf(1, "a"), "h1", nil), judged(1, "h1", planApproval), planApprovalOf(1, "h1")}
}

// TestPlanApprovalFold: where the approval of a plan leaves it. Only
// governance's judgement after the approval, naming it, approves the
// plan; a rejection stops it; a revision drops the old approval.
func TestPlanApprovalFold(t *testing.T) {
	tests := []struct {
		name string
		more []event.Payload
		want stewardv1.PlanGovernance
	}{
		{"asked", nil, stewardv1.PlanGovernance_PLAN_GOVERNANCE_AWAITING_APPROVAL},
		{"approved, not yet judged again", []event.Payload{planVoteOf("h1", "user:di", approveVote)}, stewardv1.PlanGovernance_PLAN_GOVERNANCE_AWAITING_APPROVAL},
		{"approved and judged again", []event.Payload{planVoteOf("h1", "user:di", approveVote), judgedAfter(1, "h1", planApproval)}, stewardv1.PlanGovernance_PLAN_GOVERNANCE_APPROVED},
		{"approved, then policy changed", []event.Payload{planVoteOf("h1", "user:di", approveVote), judgedAfter(1, "h1", planDeny)}, stewardv1.PlanGovernance_PLAN_GOVERNANCE_DENIED},
		{"rejected", []event.Payload{planVoteOf("h1", "user:di", rejectVote)}, stewardv1.PlanGovernance_PLAN_GOVERNANCE_REJECTED},
		{"revised", []event.Payload{planSubmitted(planOf(2, "a", "b"), "h2", &stewardv1.PlanRevision{ReplacesVersion: 1, Kept: []string{"a"}, Added: []string{"b"}})}, stewardv1.PlanGovernance_PLAN_GOVERNANCE_PENDING},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tk, err := task.Fold(stewardtest.History(t, "t1", append(planAsked(), tt.more...)...))
			if err != nil {
				t.Fatal(err)
			}
			if tk.Plan.Governance != tt.want || task.PlanRuns(tk.Plan) != (tt.want == stewardv1.PlanGovernance_PLAN_GOVERNANCE_APPROVED) {
				t.Fatalf("plan is %s, want %s", task.PlanGovernanceName(tk.Plan.Governance), task.PlanGovernanceName(tt.want))
			}
			if stopped := task.PlanStopped(tk.Plan); stopped != (len(tk.Progress.GetRemaining()) == 0) {
				t.Fatalf("stopped %v, remaining %v", stopped, tk.Progress.GetRemaining())
			}
			if tt.name == "revised" && tk.Plan.Approval != nil {
				t.Fatalf("the revision carries the old approval %v", tk.Plan.Approval)
			}
		})
	}
}

// TestPlanApprovalRefusals: what the fold refuses of a plan's approval
// and of the judgements around it.
func TestPlanApprovalRefusals(t *testing.T) {
	approved := []event.Payload{planVoteOf("h1", "user:di", approveVote)}
	tests := []struct {
		name string
		base []event.Payload
		more []event.Payload
		want string
	}{
		{"an approval policy did not ask for", []event.Payload{created(), started(), planSubmitted(planOf(1, "a"), "h1", nil), judged(1, "h1", planAllow)},
			[]event.Payload{planApprovalOf(1, "h1")}, "not awaiting approval"},
		{"an approval of another version", planAsked()[:4], []event.Payload{planApprovalOf(2, "h2")}, "not task t1's plan in force"},
		{"a second approval", planAsked(), []event.Payload{planApprovalOf(1, "h1")}, "has an approval already"},
		{"an approval naming an action too", planAsked()[:4], []event.Payload{&stewardv1.ApprovalRequested{Approval: &stewardv1.Approval{
			ApprovalId: "ap-h1", PlanVersion: 1, PlanHash: "h1", ActionId: "a1"}}}, "names both a plan and an action"},
		{"a vote on a closed approval", planAsked(), []event.Payload{planSubmitted(planOf(2, "a"), "h2", &stewardv1.PlanRevision{ReplacesVersion: 1, Kept: []string{"a"}}),
			planVoteOf("h1", "user:di", approveVote)}, "is not the open approval"},
		{"a vote for another hash", planAsked(), []event.Payload{&stewardv1.ApprovalDecided{ApprovalId: "ap-h1", PlanHash: "h2", Decision: approveVote, DecidedBy: "user:di"}}, `is for plan hash "h2"`},
		{"a vote after the decision", planAsked(), append(approved, planVoteOf("h1", "user:bo", approveVote)), "already decided"},
		{"a judgement naming an approval not given", planAsked(), []event.Payload{judgedAfter(1, "h1", planAllow)}, "is not the approved approval"},
		{"a judgement naming an approval when none was asked", []event.Payload{created(), started(), planSubmitted(planOf(1, "a"), "h1", nil), judged(1, "h1", planAllow)},
			[]event.Payload{judgedAfter(1, "h1", planAllow)}, "not awaiting approval"},
		{"a third judgement", planAsked(), append(approved, judgedAfter(1, "h1", planApproval), judgedAfter(1, "h1", planAllow)), "not awaiting approval"},
		{"a second judgement without the approval", planAsked(), append(approved, judged(1, "h1", planAllow)), "was judged already"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := task.Fold(stewardtest.History(t, "t1", append(tt.base, tt.more...)...))
			if !errs.Is(err, errs.FailedPrecondition) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("fold = %v, want a refusal saying %q", err, tt.want)
			}
		})
	}
}
