package task_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"testing"

	"github.com/steward-run/steward/pkg/errs"
	"github.com/steward-run/steward/pkg/event"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/stewardtest"
	"github.com/steward-run/steward/pkg/task"
)

func proposedAction() *stewardv1.ActionProposed {
	return &stewardv1.ActionProposed{Action: &stewardv1.Action{ActionId: "a1", ActionHash: "h1", RequestHash: "r1", Tool: "mail"}}
}

func TestLedgerWithApproval(t *testing.T) {
	tk, err := task.Fold(stewardtest.History(t, "t1",
		created(), started(), proposedAction(),
		&stewardv1.PolicyEvaluated{ActionId: "a1", Snapshot: &stewardv1.PolicySnapshot{Decision: stewardv1.PolicyDecision_POLICY_DECISION_REQUIRE_APPROVAL}},
		&stewardv1.ApprovalRequested{Approval: &stewardv1.Approval{ApprovalId: "ap1", ActionId: "a1", ActionHash: "h1"}},
	))
	if err != nil {
		t.Fatal(err)
	}
	if tk.Status != stewardv1.TaskStatus_TASK_STATUS_WAITING_FOR_APPROVAL || tk.Actions[0].Status != stewardv1.ActionStatus_ACTION_STATUS_AWAITING_APPROVAL {
		t.Fatalf("task %v, action %v", tk.Status, tk.Actions[0].Status)
	}
	tk, err = task.Fold(stewardtest.History(t, "t1",
		created(), started(), proposedAction(),
		&stewardv1.PolicyEvaluated{ActionId: "a1", Snapshot: &stewardv1.PolicySnapshot{Decision: stewardv1.PolicyDecision_POLICY_DECISION_REQUIRE_APPROVAL}},
		&stewardv1.ApprovalRequested{Approval: &stewardv1.Approval{ApprovalId: "ap1", ActionId: "a1", ActionHash: "h1"}},
		&stewardv1.ApprovalDecided{ApprovalId: "ap1", ActionId: "a1", ActionHash: "h1", Decision: stewardv1.ApprovalDecision_APPROVAL_DECISION_APPROVE, DecidedBy: "user:bo"},
		&stewardv1.ActionPermitted{Permit: &stewardv1.ActionPermit{PermitId: "p1", ActionId: "a1", ActionHash: "h1", RequestHash: "r1"}},
		&stewardv1.ActionClaimed{ActionId: "a1", PermitId: "p1", Worker: "w"},
		&stewardv1.ActionDispatched{ActionId: "a1", Attempt: 1},
		&stewardv1.ActionOutcomeRecorded{ActionId: "a1", Outcome: &stewardv1.Outcome{Status: stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED}},
	))
	if err != nil {
		t.Fatal(err)
	}
	a := tk.Actions[0]
	if tk.Status != stewardv1.TaskStatus_TASK_STATUS_RUNNING || a.Status != stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED ||
		a.Approval.DecidedBy != "user:bo" || a.Permit.PermitId != "p1" || a.ClaimedBy != "w" {
		t.Fatalf("task %v, action %v", tk.Status, a)
	}
}

func TestLedgerRefusesOutOfOrderSteps(t *testing.T) {
	base := []event.Payload{created(), started(), proposedAction()}
	tests := []struct {
		name string
		next event.Payload
	}{
		{"permit without allow", &stewardv1.ActionPermitted{Permit: &stewardv1.ActionPermit{PermitId: "p", ActionId: "a1", ActionHash: "h1", RequestHash: "r1"}}},
		{"claim before permit", &stewardv1.ActionClaimed{ActionId: "a1", PermitId: "p"}},
		{"decision with no approval", &stewardv1.ApprovalDecided{ApprovalId: "x", ActionId: "a1", ActionHash: "h1", Decision: stewardv1.ApprovalDecision_APPROVAL_DECISION_APPROVE}},
		{"unknown action", &stewardv1.PolicyEvaluated{ActionId: "nope"}},
		{"same proposal twice", proposedAction()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := task.Fold(stewardtest.History(t, "t1", append(append([]event.Payload{}, base...), tt.next)...))
			if !errs.Is(err, errs.FailedPrecondition) {
				t.Fatalf("err = %v, want failed precondition", err)
			}
		})
	}
}

func TestDecisionForAnotherHashIsRefused(t *testing.T) {
	_, err := task.Fold(stewardtest.History(t, "t1",
		created(), started(), proposedAction(),
		&stewardv1.PolicyEvaluated{ActionId: "a1", Snapshot: &stewardv1.PolicySnapshot{Decision: stewardv1.PolicyDecision_POLICY_DECISION_REQUIRE_APPROVAL}},
		&stewardv1.ApprovalRequested{Approval: &stewardv1.Approval{ApprovalId: "ap1", ActionId: "a1", ActionHash: "h1"}},
		&stewardv1.ApprovalDecided{ApprovalId: "ap1", ActionId: "a1", ActionHash: "other", Decision: stewardv1.ApprovalDecision_APPROVAL_DECISION_APPROVE},
	))
	if !errs.Is(err, errs.FailedPrecondition) {
		t.Fatalf("err = %v, want the decision refused", err)
	}
}

func TestProposalNeedsARunningTask(t *testing.T) {
	_, err := task.Fold(stewardtest.History(t, "t1", created(), proposedAction()))
	if !errs.Is(err, errs.FailedPrecondition) {
		t.Fatalf("err = %v, want refused for a pending task", err)
	}
}

func TestNothingIsClaimedOrDispatchedForACancelledTask(t *testing.T) {
	permitted := []event.Payload{
		created(), started(), proposedAction(),
		&stewardv1.PolicyEvaluated{ActionId: "a1", Snapshot: &stewardv1.PolicySnapshot{Decision: stewardv1.PolicyDecision_POLICY_DECISION_ALLOW}},
		&stewardv1.ActionPermitted{Permit: &stewardv1.ActionPermit{PermitId: "p1", ActionId: "a1", ActionHash: "h1", RequestHash: "r1"}},
	}
	claim := &stewardv1.ActionClaimed{ActionId: "a1", PermitId: "p1", Worker: "w"}
	if _, err := task.Fold(stewardtest.History(t, "t1", append(append([]event.Payload{}, permitted...), cancelled(), claim)...)); !errs.Is(err, errs.FailedPrecondition) {
		t.Fatalf("claim on a cancelled task: %v, want refused", err)
	}
	dispatch := &stewardv1.ActionDispatched{ActionId: "a1", Attempt: 1}
	if _, err := task.Fold(stewardtest.History(t, "t1", append(append([]event.Payload{}, permitted...), claim, cancelled(), dispatch)...)); !errs.Is(err, errs.FailedPrecondition) {
		t.Fatalf("dispatch on a cancelled task: %v, want refused", err)
	}
	// A claimed action may fail before dispatch, but not succeed.
	succeededEarly := &stewardv1.ActionOutcomeRecorded{ActionId: "a1", Outcome: &stewardv1.Outcome{Status: stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED}}
	if _, err := task.Fold(stewardtest.History(t, "t1", append(append([]event.Payload{}, permitted...), claim, succeededEarly)...)); !errs.Is(err, errs.FailedPrecondition) {
		t.Fatalf("success without a dispatch: %v, want refused", err)
	}
	failedEarly := &stewardv1.ActionOutcomeRecorded{ActionId: "a1", Outcome: &stewardv1.Outcome{Status: stewardv1.ActionStatus_ACTION_STATUS_FAILED}}
	if _, err := task.Fold(stewardtest.History(t, "t1", append(append([]event.Payload{}, permitted...), claim, failedEarly)...)); err != nil {
		t.Fatalf("a refusal before dispatch: %v", err)
	}
}

// TestInlineRequestMustMatchItsHash folds a proposal carrying its request
// inline: taken when the bytes hash to request_hash, refused otherwise, so
// that no event can put one request before governance and the hashes of
// another before an approver.
func TestInlineRequestMustMatchItsHash(t *testing.T) {
	request := []byte(`{"params":{},"target":"t","task_id":"t1","tool":"mail","tool_version":"1"}`)
	sum := sha256.Sum256(request)
	hash := hex.EncodeToString(sum[:])
	propose := func(req []byte, hash string) *stewardv1.ActionProposed {
		return &stewardv1.ActionProposed{Action: &stewardv1.Action{ActionId: "a1", ActionHash: "h1", RequestHash: hash, Request: req, Tool: "mail"}}
	}
	tk, err := task.Fold(stewardtest.History(t, "t1", created(), started(), propose(request, hash)))
	if err != nil {
		t.Fatal(err)
	}
	if got := tk.Actions[0].Request; !bytes.Equal(got, request) {
		t.Fatalf("ledger's request = %q, want %q", got, request)
	}
	for _, c := range []struct {
		name string
		req  []byte
		hash string
	}{
		{"another request", []byte(`{"params":{"to":"x"}}`), hash},
		{"another hash", request, "r1"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := task.Fold(stewardtest.History(t, "t1", created(), started(), propose(c.req, c.hash)))
			if !errs.Is(err, errs.FailedPrecondition) {
				t.Fatalf("err = %v, want failed precondition", err)
			}
		})
	}
}

// TestAnInlineResultHashesToItsResultHash: a succeeded outcome may carry
// its result inline, when it hashes to its result_hash and nothing is
// stored for it; any other inline result is refused.
func TestAnInlineResultHashesToItsResultHash(t *testing.T) {
	body := []byte(`{"ok":true}`)
	sum := sha256.Sum256(body)
	hash := hex.EncodeToString(sum[:])
	dispatched := []event.Payload{created(), started(), proposedAction(),
		&stewardv1.PolicyEvaluated{ActionId: "a1", Snapshot: &stewardv1.PolicySnapshot{SnapshotId: "s1", Decision: stewardv1.PolicyDecision_POLICY_DECISION_ALLOW}},
		&stewardv1.ActionPermitted{Permit: &stewardv1.ActionPermit{PermitId: "p1", ActionId: "a1", ActionHash: "h1", RequestHash: "r1", SnapshotId: "s1"}},
		&stewardv1.ActionClaimed{ActionId: "a1", PermitId: "p1", Worker: "w"},
		&stewardv1.ActionDispatched{ActionId: "a1", Attempt: 1},
	}
	outcome := func(o *stewardv1.Outcome) []event.Payload {
		o.Attempt = 1
		return append(append([]event.Payload{}, dispatched...), &stewardv1.ActionOutcomeRecorded{ActionId: "a1", Outcome: o})
	}
	tk, err := task.Fold(stewardtest.History(t, "t1", outcome(&stewardv1.Outcome{Status: stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED, Result: body, ResultHash: hash})...))
	if err != nil {
		t.Fatal(err)
	}
	if o := tk.Actions[0].Outcome; string(o.Result) != string(body) || o.ResultHash != hash {
		t.Fatalf("outcome %v, want the inline result", o)
	}
	for name, o := range map[string]*stewardv1.Outcome{
		"another hash":     {Status: stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED, Result: body, ResultHash: "beef"},
		"stored as well":   {Status: stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED, Result: body, ResultHash: hash, ResultRef: "kv://STEWARD_RESULTS/" + hash},
		"a failed outcome": {Status: stewardv1.ActionStatus_ACTION_STATUS_FAILED, Result: body, ResultHash: hash},
	} {
		if _, err := task.Fold(stewardtest.History(t, "t1", outcome(o)...)); !errs.Is(err, errs.FailedPrecondition) {
			t.Errorf("%s: err = %v, want failed precondition", name, err)
		}
	}
}
