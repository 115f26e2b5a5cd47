package governance_test

import (
	"context"
	"testing"

	"github.com/steward-run/steward/pkg/errs"
	"github.com/steward-run/steward/pkg/event"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/rpc"
)

// TestAPersonIsNotHandedTheWorkOfACancelledTask: an approval of an
// action of a cancelled task is denied at its permit; the same answered
// "a person executes it" is refused at once: nobody is handed the work.
func TestAPersonIsNotHandedTheWorkOfACancelledTask(t *testing.T) {
	e := newHarness(t)
	e.start(t)
	e.create(t, "t", "user:ana", credContract([]string{"wire"}, []string{"payments:write"}))
	e.credentialed("t")
	a := e.waitStatus("t", e.propose(t, "t", "w1", "wire"), stewardv1.ActionStatus_ACTION_STATUS_AWAITING_APPROVAL)
	e.Append("t", &stewardv1.TaskCancelled{Reason: "not needed"})
	if _, err := e.plane.Decide(context.Background(), authorizer("user:bo"), decision(a, personExecutes, nil)); !errs.Is(err, errs.FailedPrecondition) {
		t.Fatalf("a person-executes answer on a cancelled task: %v; want failed_precondition", err)
	}
	if n := e.Count("t", event.TypeApprovalDecided); n != 0 {
		t.Fatalf("the refused answer recorded %d decisions", n)
	}
}

// TestAnAmendmentIsNoOracleForAStranger: a caller of the tenant without
// the approval's role learns nothing of the action's parameters: an
// amendment they may not make is refused alike, whatever it names.
func TestAnAmendmentIsNoOracleForAStranger(t *testing.T) {
	e, orig := awaitingWire(t, "agent")
	stranger := rpc.Identity{Principal: "user:eve"}
	_, right := e.plane.Decide(context.Background(), stranger, decision(orig, amend, map[string]any{"amount": 500}))
	_, wrong := e.plane.Decide(context.Background(), stranger, decision(orig, amend, map[string]any{"amount": 501}))
	if !errs.Is(right, errs.PermissionDenied) || !errs.Is(wrong, errs.PermissionDenied) {
		t.Fatalf("a stranger's amendment naming the action's parameters: %v; naming others: %v (want permission denied for both)", right, wrong)
	}
}

// TestTheAmenderMayNotApproveAnEditOfTheAmendment: the agent edits the
// amended action (edit_of), proposing the approver's own parameters in its
// name: the amender still may not approve them.
func TestTheAmenderMayNotApproveAnEditOfTheAmendment(t *testing.T) {
	e, orig := awaitingWire(t, "agent")
	amended := e.amendedByBo(t, orig)
	e.Append("t", &stewardv1.ActionWithdrawn{ActionId: amended.ActionId, ReplacedBy: "edit"})
	edit := e.waitStatus("t", e.proposeWith(t, "t", "e1", "wire2", "", "agent", map[string]any{"amount": 50}, orig.Rationale,
		func(a *stewardv1.Action) { a.EditOf = amended.ActionId }), stewardv1.ActionStatus_ACTION_STATUS_AWAITING_APPROVAL)
	if _, err := e.plane.Decide(context.Background(), authorizer("user:bo"), decision(edit, approve, nil)); !errs.Is(err, errs.PermissionDenied) {
		t.Errorf("the amender approving the agent's edit of their amendment (the same parameters): %v, want permission denied", err)
	}
}
