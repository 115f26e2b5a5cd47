package control_test

import (
	"context"
	"slices"
	"testing"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/rpc"
)

// TestReviseContractMilestones: a revision may add milestones, which the
// task then shows and tracks, but not drop one that work was tagged with.
func TestReviseContractMilestones(t *testing.T) {
	r := newHarness(t)
	ctx := context.Background()
	id := r.phasedTask(t, "rev-milestones")
	if _, _, err := r.ctl.ProposeAction(ctx, "agent", &stewardv1.ProposeActionRequest{TaskId: id, ProposalId: "p1", Tool: "search", Target: "x", MilestoneId: "collect"}); err != nil {
		t.Fatal(err)
	}
	revise := func(requestID string, ms ...*stewardv1.Milestone) (*stewardv1.Task, *stewardv1.ContractRevision, error) {
		return r.ctl.ReviseContract(ctx, "t", &stewardv1.ReviseContractRequest{TaskId: id, RequestId: requestID, Reason: "a new phase",
			Contract: &stewardv1.TaskContract{Milestones: ms}})
	}
	report := &stewardv1.Milestone{MilestoneId: "report", Title: "Write the summary"}
	if _, _, err := revise("rev-drop", report); fieldOf(err) != "contract.milestones" {
		t.Fatalf("dropping a worked milestone: %v, want a refusal naming contract.milestones", err)
	}
	collect := &stewardv1.Milestone{MilestoneId: "collect", Title: "Collect the news", MaxActions: 2}
	publish := &stewardv1.Milestone{MilestoneId: "publish", Title: "Publish it"}
	tk, rev, err := revise("rev-add", collect, report, publish)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(rev.Changed, []string{"milestones"}) {
		t.Fatalf("changed %v, want milestones", rev.Changed)
	}
	tk = r.judge(t, tk, stewardv1.PolicyDecision_POLICY_DECISION_ALLOW)
	if _, _, err := r.ctl.DecideContractRevision(ctx, rpc.Identity{Principal: "user:a"}, &stewardv1.DecideContractRevisionRequest{TaskId: id, RevisionId: rev.RevisionId, Approve: true, Comment: "ok"}); err != nil {
		t.Fatal(err)
	}
	tk = r.task(t, id)
	if tk.ContractVersion != 2 || len(tk.Milestones) != 3 || tk.Milestones[2].MilestoneId != "publish" || tk.Milestones[0].ActionsUsed != 1 || tk.CurrentMilestone != "collect" {
		t.Fatalf("after the revision: version %d, milestones %v, current %s", tk.ContractVersion, tk.Milestones, tk.CurrentMilestone)
	}
}
