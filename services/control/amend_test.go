package control_test

import (
	"context"
	"testing"

	"github.com/steward-run/steward/pkg/action"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/rpc"
	"github.com/steward-run/steward/pkg/task"
)

// amendOpen plays governance: policy asks an approval of the write a, and
// user:bo amends it to params (canonical JSON). It returns the id of the
// action the amendment asks for.
func (r *harness) amendOpen(taskID string, a *stewardv1.Action, params string) string {
	apID := "ap-" + a.ActionId
	amended := action.ID(taskID, action.AmendmentID(apID, []byte(params)))
	r.Append(taskID,
		&stewardv1.PolicyEvaluated{ActionId: a.ActionId, Snapshot: &stewardv1.PolicySnapshot{SnapshotId: "s-" + a.ActionId, Decision: stewardv1.PolicyDecision_POLICY_DECISION_REQUIRE_APPROVAL}},
		&stewardv1.ApprovalRequested{Approval: &stewardv1.Approval{ApprovalId: apID, ActionId: a.ActionId, ActionHash: a.ActionHash}},
		&stewardv1.ApprovalDecided{ApprovalId: apID, ActionId: a.ActionId, ActionHash: a.ActionHash, DecidedBy: "user:bo",
			Decision: stewardv1.ApprovalDecision_APPROVAL_DECISION_AMEND, AmendedParamsJson: params, AmendedActionId: amended})
	return amended
}

// TestAnAmendmentIsProposedOnce: the control plane answers an approver's
// amendment by proposing the same call with the approver's parameters, in
// the approver's name, linked both ways, and once however often the
// decision is delivered. An amendment decided while the task is paused is
// proposed when it is resumed, not before.
func TestAnAmendmentIsProposedOnce(t *testing.T) {
	r := newHarness(t)
	ctx := context.Background()
	id := r.runningTask(t, "amend-1", stewardv1.RecoveryMode_RECOVERY_MODE_UNSPECIFIED, nil)
	orig := r.propose(t, id, "w1", "write", "doc", map[string]any{"text": "draft"})
	amendedID := r.amendOpen(id, orig, `{"text":"final"}`)

	tk := r.WaitTask(id, func(tk *stewardv1.Task) bool { return task.FindAction(tk, amendedID) != nil })
	a, o := task.FindAction(tk, amendedID), task.FindAction(tk, orig.ActionId)
	if o.Status != stewardv1.ActionStatus_ACTION_STATUS_REJECTED || o.AmendedAs != amendedID {
		t.Fatalf("the original: %v", o)
	}
	if a.ProposedBy != "user:bo" || a.AmendmentOf != orig.ActionId || a.Tool != "write" || a.Target != "doc" || a.RequestHash == orig.RequestHash {
		t.Fatalf("the amended action: %v", a)
	}
	canonical, err := r.Requests.Request(ctx, a.Request, a.RequestRef, a.RequestHash)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := action.Canonical(action.Request{TaskID: id, Tool: "write", ToolVersion: "1", Target: "doc", Params: []byte(`{"text":"final"}`)})
	if string(canonical) != string(want) {
		t.Fatalf("the amended request %s, want %s", canonical, want)
	}

	r.redeliver(t)
	if n := r.countWhere(t, id, func(ev *stewardv1.Event) bool { return ev.GetActionProposed() != nil }); n != 2 {
		t.Fatalf("%d proposals after the decision was delivered again, want the original and its amendment", n)
	}

	second := r.propose(t, id, "w2", "write", "doc", map[string]any{"text": "second"})
	if _, err := r.ctl.PauseTask(ctx, rpc.Identity{Principal: "t"}, &stewardv1.PauseTaskRequest{TaskId: id, Reason: "lunch"}); err != nil {
		t.Fatal(err)
	}
	later := r.amendOpen(id, second, `{"text":"later"}`)
	r.settle()
	if task.FindAction(r.task(t, id), later) != nil {
		t.Fatal("an amendment was proposed into a paused task")
	}
	if _, err := r.ctl.ResumeTask(ctx, rpc.Identity{Principal: "t"}, &stewardv1.ResumeTaskRequest{TaskId: id, Reason: "back"}); err != nil {
		t.Fatal(err)
	}
	r.WaitTask(id, func(tk *stewardv1.Task) bool { return task.FindAction(tk, later) != nil })
}
