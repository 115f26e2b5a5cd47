package state_test

import (
	"testing"
	"time"

	"github.com/steward-run/steward/pkg/event"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/stewardtest"
	"github.com/steward-run/steward/services/state"
)

// TestACompensatingTaskWaitingForAPersonIsNotMarked (review 26b): a task
// cancelled with compensation while another of its actions was permitted
// keeps that permit (execution never claims it: task.MayRun is false for
// a non-compensation of a compensating task, and nothing closes it). Its
// compensation waits for a person's approval. The task waits on a person
// and nothing a plane does again can move it; yet at the re-drive bound
// the watchdog marks it stalled, naming the dead permit.
func TestACompensatingTaskWaitingForAPersonIsNotMarked(t *testing.T) {
	env := stewardtest.NewEnv(t)
	proj := follow(t, env.Log)
	allow := &stewardv1.PolicySnapshot{SnapshotId: "s", Decision: stewardv1.PolicyDecision_POLICY_DECISION_ALLOW}
	ask := &stewardv1.PolicySnapshot{SnapshotId: "s2", Decision: stewardv1.PolicyDecision_POLICY_DECISION_REQUIRE_APPROVAL}
	h := []event.Payload{
		&stewardv1.TaskCreated{Contract: contract(0)}, &stewardv1.TaskStarted{},
		&stewardv1.ActionProposed{Action: &stewardv1.Action{ActionId: "a", ProposalId: "p1", Tool: "book", ActionHash: "h", RequestHash: "r", EffectClass: stewardv1.EffectClass_EFFECT_CLASS_REVERSIBLE_WRITE}},
		&stewardv1.PolicyEvaluated{ActionId: "a", Snapshot: allow},
		&stewardv1.ActionPermitted{Permit: &stewardv1.ActionPermit{PermitId: "pm-a", ActionId: "a", ActionHash: "h", RequestHash: "r"}},
		&stewardv1.ActionClaimed{ActionId: "a", PermitId: "pm-a", Worker: "w1"},
		&stewardv1.ActionDispatched{ActionId: "a", Attempt: 1, Worker: "w1"},
		&stewardv1.ActionOutcomeRecorded{ActionId: "a", Outcome: &stewardv1.Outcome{Status: stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED, Attempt: 1}},
		// b is permitted; the task is cancelled with compensation before a worker claims it.
		&stewardv1.ActionProposed{Action: &stewardv1.Action{ActionId: "b", ProposalId: "p2", Tool: "mail", ActionHash: "h2", RequestHash: "r2"}},
		&stewardv1.PolicyEvaluated{ActionId: "b", Snapshot: allow},
		&stewardv1.ActionPermitted{Permit: &stewardv1.ActionPermit{PermitId: "pm-b", ActionId: "b", ActionHash: "h2", RequestHash: "r2"}},
		&stewardv1.TaskCompensating{Reason: "cancelled", FinalStatus: stewardv1.TaskStatus_TASK_STATUS_CANCELLED, ActionIds: []string{"a"}},
		// a's compensation waits for a person.
		&stewardv1.ActionProposed{Action: &stewardv1.Action{ActionId: "c", ProposalId: "compensate-a", Tool: "unbook", ActionHash: "h3", RequestHash: "r3", Compensates: "a"}},
		&stewardv1.PolicyEvaluated{ActionId: "c", Snapshot: ask},
		&stewardv1.ApprovalRequested{Approval: &stewardv1.Approval{ApprovalId: "apv-c", ActionId: "c", ActionHash: "h3"}},
	}
	last := env.Append("comp", h...)
	if last.Status != stewardv1.TaskStatus_TASK_STATUS_COMPENSATING {
		t.Fatalf("status %v", last.Status)
	}
	stewardtest.Eventually(t, 10*time.Second, func() (bool, string) {
		v, _ := proj.Get("comp")
		return v != nil && v.LastSequence == last.LastSequence, "the projection does not follow"
	})
	at := last.UpdatedAt.AsTime().Add(state.DefaultRedriveAfter + time.Second)
	if got := proj.Quiet(at, state.DefaultRedriveAfter); len(got) != 0 {
		t.Errorf("at the re-drive bound, marked stalled %v: the task waits on a person for its compensation, and its leftover permit can never be claimed", got)
	}
}
