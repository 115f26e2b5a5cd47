package state_test

import (
	"log/slog"
	"testing"

	"github.com/steward-run/steward/pkg/event"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/stewardtest"
	"github.com/steward-run/steward/pkg/task"
	"github.com/steward-run/steward/services/state"
)

// TestAForksCarriedActionsAreNotCountedAgain: a parent with one
// succeeded action, and a fork of it that did nothing yet. The ledgers
// hold one action; the fork carries it as state, not as its own (found
// by review).
func TestAForksCarriedActionsAreNotCountedAgain(t *testing.T) {
	const id = "a1"
	parentEvents := []event.Payload{&stewardv1.TaskCreated{Contract: contract(1)}, &stewardv1.TaskStarted{},
		&stewardv1.ActionProposed{Action: &stewardv1.Action{ActionId: id, Tool: "kv.append", ActionHash: "h-" + id, RequestHash: "r-" + id, EffectClass: stewardv1.EffectClass_EFFECT_CLASS_IDEMPOTENT_WRITE}},
		&stewardv1.PolicyEvaluated{ActionId: id, Snapshot: &stewardv1.PolicySnapshot{SnapshotId: "s-" + id, Decision: stewardv1.PolicyDecision_POLICY_DECISION_ALLOW}},
		&stewardv1.ActionPermitted{Permit: &stewardv1.ActionPermit{PermitId: "p-" + id, ActionId: id, ActionHash: "h-" + id, RequestHash: "r-" + id, CredentialRef: "cred-1"}},
		&stewardv1.ActionClaimed{ActionId: id, PermitId: "p-" + id, Worker: "w"},
		&stewardv1.ActionDispatched{ActionId: id, Attempt: 1, Worker: "w"},
		&stewardv1.ActionOutcomeRecorded{ActionId: id, Outcome: &stewardv1.Outcome{Status: stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED, Attempt: 1}},
	}
	parent := stewardtest.History(t, "parent", parentEvents...)
	at, err := task.Fold(parent)
	if err != nil {
		t.Fatal(err)
	}
	last := parent[len(parent)-1]
	fork := stewardtest.History(t, "fork", &stewardv1.TaskCreated{Contract: contract(2), Fork: &stewardv1.ForkOrigin{
		ParentTaskId: "parent", AtSequence: last.Sequence, AtHash: last.Event.Hash, Reason: "again", State: task.ForkState(at)}})
	p := state.NewProjection(slog.New(slog.DiscardHandler))
	for _, h := range [][]*stewardv1.EventRecord{parent, fork} {
		for _, r := range h {
			if err := p.Apply(r); err != nil {
				t.Fatal(err)
			}
		}
	}
	if got := gatherMetric(t, state.NewTaskCollector(p), "steward_actions")["succeeded"]; got != 1 {
		t.Errorf("steward_actions{status=succeeded} = %v; the ledgers hold one succeeded action, the fork's copy is its parent's", got)
	}
}
