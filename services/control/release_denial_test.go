package control_test

import (
	"testing"
	"time"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// TestReleaseWhenAnEndedTasksActionIsDeniedOnRevalidation: a sub-task
// cancelled while an action (a read) that already made a call is
// revalidating (callsOut says its cost may still land) must give back its
// reservation once governance denies the action with the calls' cost.
// Found by an independent review: the release reacted only to outcomes and
// settlements.
func TestReleaseWhenAnEndedTasksActionIsDeniedOnRevalidation(t *testing.T) {
	d := startChain(t)
	parent := d.parent(t, "reval-parent", time.Now(), time.Hour)
	id := d.subTask(t, parent.Contract.TaskId, "child", 300, 500).Contract.TaskId
	d.Append(id, &stewardv1.ActionProposed{Action: &stewardv1.Action{ActionId: "a1", Tool: "search", EffectClass: stewardv1.EffectClass_EFFECT_CLASS_READ, ActionHash: "h", RequestHash: "r"}})
	d.Append(id, &stewardv1.PolicyEvaluated{ActionId: "a1", Snapshot: &stewardv1.PolicySnapshot{SnapshotId: "s", Decision: stewardv1.PolicyDecision_POLICY_DECISION_ALLOW}})
	d.Append(id, &stewardv1.ActionPermitted{Permit: &stewardv1.ActionPermit{PermitId: "p", ActionId: "a1", ActionHash: "h", RequestHash: "r"}})
	d.Append(id, &stewardv1.ActionClaimed{ActionId: "a1", PermitId: "p", Worker: "w"})
	d.Append(id, &stewardv1.ActionDispatched{ActionId: "a1", Attempt: 1, Worker: "w", PermitId: "p"})
	d.Append(id, &stewardv1.ActionWaiting{ActionId: "a1", Kind: stewardv1.WaitKind_WAIT_KIND_RETRY, NextAttempt: 2, Reason: "transient"})
	d.Append(id, &stewardv1.ActionRevalidating{ActionId: "a1", PermitId: "p", Reason: stewardv1.RevalidationReason_REVALIDATION_REASON_RETRY})
	d.cancel(t, id)
	d.settle() // ended with a call's cost still to land: nothing given back yet
	if u := d.task(t, parent.Contract.TaskId).BudgetUsed; u.GetTokens() != 300 {
		t.Fatalf("the parent has %d tokens used while the action revalidates, want the 300 reserved", u.GetTokens())
	}
	// Governance denies it in the ended task, with the call's cost.
	d.Append(id, &stewardv1.ActionDenied{ActionId: "a1", SnapshotId: "s2", Reasons: []string{"the task is cancelled"}, CostMicros: 100})
	got := d.WaitTask(parent.Contract.TaskId, func(tk *stewardv1.Task) bool { return tk.BudgetUsed.GetTokens() == 0 })
	if got.BudgetUsed.GetCostMicros() != 100 {
		t.Errorf("the parent has %d micro-units used, want the attempt's 100", got.BudgetUsed.GetCostMicros())
	}
}
