package task_test

import (
	"slices"
	"testing"

	"github.com/steward-run/steward/pkg/errs"
	"github.com/steward-run/steward/pkg/event"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/stewardtest"
	"github.com/steward-run/steward/pkg/task"
)

// awaitingTwo is a history whose action a1 awaits an approval that needs
// two approvers.
func awaitingTwo() []event.Payload {
	snap := &stewardv1.PolicySnapshot{Decision: stewardv1.PolicyDecision_POLICY_DECISION_REQUIRE_APPROVAL, RequiredApprovals: 2}
	return []event.Payload{
		created(), started(), proposedAction(),
		&stewardv1.PolicyEvaluated{ActionId: "a1", Snapshot: snap},
		&stewardv1.ApprovalRequested{Approval: &stewardv1.Approval{ApprovalId: "ap1", ActionId: "a1", ActionHash: "h1", RequiredApprovals: 2}},
	}
}

func voteBy(who string, d stewardv1.ApprovalDecision) *stewardv1.ApprovalDecided {
	return &stewardv1.ApprovalDecided{ApprovalId: "ap1", ActionId: "a1", ActionHash: "h1", Decision: d, DecidedBy: who, Comment: "from " + who}
}

const (
	approveVote = stewardv1.ApprovalDecision_APPROVAL_DECISION_APPROVE
	rejectVote  = stewardv1.ApprovalDecision_APPROVAL_DECISION_REJECT
)

// TestVotes: each decision is a vote; an approval of two is decided by the
// second distinct approval, decided_by naming its giver, and a permit may
// follow only then.
func TestVotes(t *testing.T) {
	fold := func(more ...event.Payload) (*stewardv1.Task, error) {
		return task.Fold(stewardtest.History(t, "t1", append(awaitingTwo(), more...)...))
	}
	tk, err := fold(voteBy("user:bo", approveVote))
	if err != nil {
		t.Fatal(err)
	}
	a := tk.Actions[0]
	if a.Status != stewardv1.ActionStatus_ACTION_STATUS_AWAITING_APPROVAL || a.Approval.Decision != stewardv1.ApprovalDecision_APPROVAL_DECISION_UNSPECIFIED ||
		len(a.Approval.Votes) != 1 || a.Approval.Votes[0].Principal != "user:bo" || a.Approval.Votes[0].DecidedAt == nil {
		t.Fatalf("after one vote of two: %v", a)
	}
	if tk.Status != stewardv1.TaskStatus_TASK_STATUS_WAITING_FOR_APPROVAL {
		t.Fatalf("task is %v while an approval waits for its second vote", tk.Status)
	}
	permit := &stewardv1.ActionPermitted{Permit: &stewardv1.ActionPermit{PermitId: "p1", ActionId: "a1", ActionHash: "h1", RequestHash: "r1"}}
	if _, err := fold(voteBy("user:bo", approveVote), permit); !errs.Is(err, errs.FailedPrecondition) {
		t.Fatalf("a permit after one vote of two: %v, want refused", err)
	}
	if _, err := fold(voteBy("user:bo", approveVote), voteBy("user:bo", approveVote)); !errs.Is(err, errs.FailedPrecondition) {
		t.Fatalf("a second vote by the same approver: %v, want refused", err)
	}
	tk, err = fold(voteBy("user:bo", approveVote), voteBy("user:di", approveVote), permit)
	if err != nil {
		t.Fatal(err)
	}
	a = tk.Actions[0]
	if a.Status != stewardv1.ActionStatus_ACTION_STATUS_PERMITTED || a.Approval.Decision != approveVote || a.Approval.DecidedBy != "user:di" ||
		a.Approval.Comment != "from user:di" || !slices.Equal(task.Approvers(a.Approval), []string{"user:bo", "user:di"}) {
		t.Fatalf("after two votes: %v", a)
	}
}

// TestRejectionVoteDecides: the first rejection decides, whatever the
// approvals so far.
func TestRejectionVoteDecides(t *testing.T) {
	tk, err := task.Fold(stewardtest.History(t, "t1", append(awaitingTwo(), voteBy("user:bo", approveVote), voteBy("user:di", rejectVote))...))
	if err != nil {
		t.Fatal(err)
	}
	a := tk.Actions[0]
	if a.Status != stewardv1.ActionStatus_ACTION_STATUS_REJECTED || a.Approval.Decision != rejectVote || a.Approval.DecidedBy != "user:di" || len(a.Approval.Votes) != 2 {
		t.Fatalf("after a rejection: %v", a)
	}
}

// TestOneApproverByDefault: an approval that names no count (every one
// recorded before counts existed) is decided by its first approval.
func TestOneApproverByDefault(t *testing.T) {
	tk, err := task.Fold(stewardtest.History(t, "t1",
		created(), started(), proposedAction(),
		&stewardv1.PolicyEvaluated{ActionId: "a1", Snapshot: &stewardv1.PolicySnapshot{Decision: stewardv1.PolicyDecision_POLICY_DECISION_REQUIRE_APPROVAL}},
		&stewardv1.ApprovalRequested{Approval: &stewardv1.Approval{ApprovalId: "ap1", ActionId: "a1", ActionHash: "h1"}},
		voteBy("user:bo", approveVote)))
	if err != nil {
		t.Fatal(err)
	}
	if a := tk.Actions[0]; a.Status != stewardv1.ActionStatus_ACTION_STATUS_APPROVED || a.Approval.DecidedBy != "user:bo" {
		t.Fatalf("one approval of one: %v", a)
	}
}

// TestRationaleIsRecorded: the proposer's rationale is kept on the action
// as proposed.
func TestRationaleIsRecorded(t *testing.T) {
	p := proposedAction()
	p.Action.Rationale = &stewardv1.ActionRationale{ExpectedImpact: "i", RollbackPlan: "r", Evidence: []string{"e"}, Alternatives: []string{"a"}}
	tk, err := task.Fold(stewardtest.History(t, "t1", created(), started(), p))
	if err != nil {
		t.Fatal(err)
	}
	if r := tk.Actions[0].Rationale; r.GetRollbackPlan() != "r" || !slices.Equal(r.GetAlternatives(), []string{"a"}) {
		t.Fatalf("rationale: %v", r)
	}
}
