package auditbundle

import (
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/stewardtest"
)

// TestApproversAreCheckedFromTheRecord: an approval that governance
// would have refused — given by the proposer, by a stakeholder under
// separation of duties, without the authorizer, or by too few; a plan's
// by its submitter or without the authorizer — fails in the approvals
// section naming the action or plan version; an allowed one does not.
func TestApproversAreCheckedFromTheRecord(t *testing.T) {
	approve := stewardv1.ApprovalDecision_APPROVAL_DECISION_APPROVE
	vote := func(who string) *stewardv1.ApprovalVote {
		return &stewardv1.ApprovalVote{Principal: who, Decision: approve}
	}
	base := &stewardv1.Task{
		Contract:  &stewardv1.TaskContract{TaskId: "t1", RequesterRef: "user:ana", AuthorizerRef: "user:bo"},
		CreatedBy: "agent:lead",
		Actions: []*stewardv1.Action{{ActionId: "a1", ProposedBy: "agent:lead", Approval: &stewardv1.Approval{
			ApprovalId: "ap1", Decision: approve, Votes: []*stewardv1.ApprovalVote{vote("user:bo")},
		}}},
	}
	for _, tc := range []struct {
		name   string
		change func(t *stewardv1.Task)
		want   string // "" when allowed
	}{
		{"the authorizer alone", func(*stewardv1.Task) {}, ""},
		{"the proposer", func(t *stewardv1.Task) {
			t.Contract.AuthorizerRef = ""
			t.Actions[0].Approval.Votes = []*stewardv1.ApprovalVote{vote("agent:lead")}
		}, "approved by agent:lead, who proposed action a1"},
		{"a stakeholder under separation of duties", func(t *stewardv1.Task) {
			t.Contract.AuthorizerRef, t.Contract.SeparationOfDuties = "", true
			t.Actions[0].Approval.Votes = []*stewardv1.ApprovalVote{vote("user:ana")}
		}, "approved by user:ana, the requester"},
		{"without the authorizer", func(t *stewardv1.Task) {
			t.Actions[0].Approval.Votes = []*stewardv1.ApprovalVote{vote("user:di")}
		}, "authorizer user:bo is not among its approvers"},
		{"too few", func(t *stewardv1.Task) {
			t.Actions[0].Approval.RequiredApprovals = 2
		}, "approved by 1 of the 2 approvers it needs"},
		{"a plan approved by its submitter", func(t *stewardv1.Task) {
			t.Contract.AuthorizerRef = ""
			ap := t.Actions[0].Approval
			t.Actions = nil
			t.Plan = &stewardv1.PlanState{Version: 2, SubmittedBy: "agent:lead", Approval: ap}
			ap.Votes = []*stewardv1.ApprovalVote{vote("agent:lead")}
		}, "approved by agent:lead, who submitted the plan"},
		{"a plan without the authorizer", func(t *stewardv1.Task) {
			ap := t.Actions[0].Approval
			t.Actions = nil
			t.Plan = &stewardv1.PlanState{Version: 2, SubmittedBy: "agent:lead", Approval: ap}
			ap.Votes = []*stewardv1.ApprovalVote{vote("user:di")}
		}, "authorizer user:bo is not among its approvers"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tk := proto.CloneOf(base)
			tc.change(tk)
			r := &Report{}
			checkDecided("t1", tk, "ap1", r)
			item := "task t1 action a1 approval ap1"
			if tk.Plan != nil {
				item = "task t1 plan version 2 approval ap1"
			}
			switch {
			case tc.want == "" && !r.OK():
				t.Errorf("refused: %v", r.Failures)
			case tc.want != "" && (r.OK() || r.Failures[0].Section != SectionApprovals || r.Failures[0].Item != item || !strings.Contains(r.Failures[0].Reason, tc.want)):
				t.Errorf("failures %v, want one in approvals naming %q: %q", r.Failures, item, tc.want)
			}
		})
	}
}

// TestMarshalIsDeterministic: the same content, in any order, gives the
// same bytes.
func TestMarshalIsDeterministic(t *testing.T) {
	a := &stewardv1.AuditBundle{
		Tasks:  []*stewardv1.BundleTask{{TaskId: "b"}, {TaskId: "a"}},
		Inputs: []*stewardv1.BundleBlob{{Hash: "2"}, {Hash: "1"}},
		Tools:  [][]byte{[]byte("y"), []byte("x")},
		Keys:   []*stewardv1.BundleKey{{KeyId: "k2"}, {KeyId: "k1"}},
	}
	b := proto.CloneOf(a)
	b.Tasks[0], b.Tasks[1] = b.Tasks[1], b.Tasks[0]
	b.Tools[0], b.Tools[1] = b.Tools[1], b.Tools[0]
	x, err := Marshal(a)
	if err != nil {
		t.Fatal(err)
	}
	y, err := Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	if string(x) != string(y) {
		t.Error("the same bundle in another order marshals to other bytes")
	}
	if got, err := Unmarshal(x); err != nil || got.Tasks[0].TaskId != "a" {
		t.Errorf("Unmarshal = %v, %v", got, err)
	}
}

// TestApproversAreJudgedAtTheVote: checkApprovers folds the task's
// events and judges each approval at the vote that decided it, an
// action's as a plan's: the proposer's vote fails, naming it; the
// authorizer's holds.
func TestApproversAreJudgedAtTheVote(t *testing.T) {
	approval := func(by string) []*stewardv1.EventRecord {
		return stewardtest.History(t, "t1",
			&stewardv1.TaskCreated{Contract: &stewardv1.TaskContract{TaskId: "t1", Intent: "i", DesiredOutcome: "o", RequesterRef: "user:ana", AccountableOwnerRef: "user:ana"}},
			&stewardv1.TaskStarted{},
			&stewardv1.ActionProposed{Action: &stewardv1.Action{ActionId: "a1", ProposalId: "p1", Tool: "wire", ActionHash: "h1", RequestHash: "r1", ProposedBy: "agent:lead"}},
			&stewardv1.PolicyEvaluated{ActionId: "a1", Snapshot: &stewardv1.PolicySnapshot{SnapshotId: "s1", Decision: stewardv1.PolicyDecision_POLICY_DECISION_REQUIRE_APPROVAL}},
			&stewardv1.ApprovalRequested{Approval: &stewardv1.Approval{ApprovalId: "ap1", ActionId: "a1", ActionHash: "h1", RequiredRoles: []string{"authorizer"}}},
			&stewardv1.ApprovalDecided{ApprovalId: "ap1", ActionId: "a1", ActionHash: "h1", Decision: stewardv1.ApprovalDecision_APPROVAL_DECISION_APPROVE, DecidedBy: by},
		)
	}
	r := &Report{}
	checkApprovers(&bundleTask{id: "t1", recs: approval("user:bo")}, r)
	if !r.OK() || r.Approvals != 1 {
		t.Errorf("user:bo's approval: %v, %d approvals", r.Failures, r.Approvals)
	}
	r = &Report{}
	checkApprovers(&bundleTask{id: "t1", recs: approval("agent:lead")}, r)
	if len(r.Failures) != 1 || r.Failures[0].Item != "task t1 action a1 approval ap1" || !strings.Contains(r.Failures[0].Reason, "who proposed action a1") {
		t.Errorf("the proposer's approval: %v", r.Failures)
	}
}
