package task_test

import (
	"testing"

	"github.com/steward-run/steward/pkg/errs"
	"github.com/steward-run/steward/pkg/event"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/stewardtest"
	"github.com/steward-run/steward/pkg/task"
)

const (
	amendVote  = stewardv1.ApprovalDecision_APPROVAL_DECISION_AMEND
	personVote = stewardv1.ApprovalDecision_APPROVAL_DECISION_PERSON_EXECUTES
)

// amendedBy is user's amendment of a1, asking for action a2.
func amendedBy(user string) *stewardv1.ApprovalDecided {
	d := voteBy(user, amendVote)
	d.AmendedParamsJson, d.AmendedActionId = `{"n":2}`, "a2"
	return d
}

// settledBy is who's settlement of a1 as state, with evidence.
func settledBy(who string, state stewardv1.SettleState, evidence ...string) *stewardv1.ActionSettled {
	return &stewardv1.ActionSettled{ActionId: "a1", State: state, SettledBy: who, Reason: "done at the desk", Evidence: evidence}
}

// TestAmendAndPersonAnswersFold: an amendment decides at once, even of an
// approval that needs two, rejecting the action and naming the one that
// replaces it, which alone may be proposed as its amendment; a person's
// execution completes an approval without a permit, and only that person
// settles it, done or not, with evidence kept on the outcome.
func TestAmendAndPersonAnswersFold(t *testing.T) {
	fold := func(more ...event.Payload) (*stewardv1.Task, error) {
		return task.Fold(stewardtest.History(t, "t1", append(awaitingTwo(), more...)...))
	}
	tk, err := fold(voteBy("user:bo", approveVote), amendedBy("user:di"))
	if err != nil {
		t.Fatal(err)
	}
	if a := tk.Actions[0]; a.Status != stewardv1.ActionStatus_ACTION_STATUS_REJECTED || a.AmendedAs != "a2" || a.Approval.AmendedActionId != "a2" || a.Approval.AmendedParamsJson != `{"n":2}` {
		t.Fatalf("after an amendment: %v", a)
	}
	bare := voteBy("user:di", amendVote)
	proposal := func(id, of string) *stewardv1.ActionProposed {
		return &stewardv1.ActionProposed{Action: &stewardv1.Action{ActionId: id, Tool: "t", AmendmentOf: of, ProposedBy: "user:di"}}
	}
	for name, history := range map[string][]event.Payload{
		"an amendment without its parameters":      {bare},
		"a person's execution as the first of two": {voteBy("user:bo", personVote)},
		"an amendment proposed under another id":   {amendedBy("user:di"), proposal("a3", "a1")},
		"an amendment of what was not amended":     {voteBy("user:bo", rejectVote), proposal("a2", "a1")},
	} {
		if _, err := fold(history...); !errs.Is(err, errs.FailedPrecondition) {
			t.Errorf("%s: %v, want refused", name, err)
		}
	}
	if _, err := fold(amendedBy("user:di"), proposal("a2", "a1")); err != nil {
		t.Fatalf("the amendment's proposal: %v", err)
	}

	executing := []event.Payload{voteBy("user:bo", approveVote), voteBy("user:di", personVote)}
	tk, err = fold(executing...)
	if err != nil {
		t.Fatal(err)
	}
	if a := tk.Actions[0]; a.Status != stewardv1.ActionStatus_ACTION_STATUS_PERSON_EXECUTING || task.Executor(a) != "user:di" || task.Moving(tk, a) {
		t.Fatalf("a person's execution: %v", a)
	}
	succeeded := stewardv1.SettleState_SETTLE_STATE_SUCCEEDED
	for name, s := range map[string]*stewardv1.ActionSettled{
		"by another approver": settledBy("user:bo", succeeded, "ticket:1"),
		"as not accepted":     settledBy("user:di", stewardv1.SettleState_SETTLE_STATE_NOT_ACCEPTED),
	} {
		if _, err := fold(append(executing, s)...); !errs.Is(err, errs.FailedPrecondition) {
			t.Errorf("a settlement %s: %v, want refused", name, err)
		}
	}
	tk, err = fold(append(executing, settledBy("user:di", succeeded, "ticket:1"))...)
	if err != nil {
		t.Fatal(err)
	}
	if a := tk.Actions[0]; a.Status != stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED || a.SettledBy != "user:di" || len(a.Outcome.GetEvidence()) != 1 || a.Permit != nil {
		t.Fatalf("a person's execution settled: %v", a)
	}
}
