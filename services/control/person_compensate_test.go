package control_test

import (
	"testing"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/services/control"
)

// TestAPersonsWorkIsTheirsToUndo: a succeeded reversible write a person
// executed made no call, so no compensating tool undoes it; and a task
// that compensates waits for a person still at work, as for a call out.
func TestAPersonsWorkIsTheirsToUndo(t *testing.T) {
	write := func(decision stewardv1.ApprovalDecision, status stewardv1.ActionStatus) *stewardv1.Action {
		return &stewardv1.Action{ActionId: "a", Status: status, EffectClass: stewardv1.EffectClass_EFFECT_CLASS_REVERSIBLE_WRITE,
			Approval: &stewardv1.Approval{Decision: decision, DecidedBy: "user:bo"}}
	}
	approve, person := stewardv1.ApprovalDecision_APPROVAL_DECISION_APPROVE, stewardv1.ApprovalDecision_APPROVAL_DECISION_PERSON_EXECUTES
	succeeded := stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED
	if !control.Undoable(write(approve, succeeded)) || control.Undoable(write(person, succeeded)) {
		t.Error("undoable: a call's write is, a person's is not")
	}
	at := &stewardv1.Task{Actions: []*stewardv1.Action{write(person, stewardv1.ActionStatus_ACTION_STATUS_PERSON_EXECUTING)}}
	if !control.InFlight(at) {
		t.Error("a person at work is not in flight: the compensation would end before they settle")
	}
}
