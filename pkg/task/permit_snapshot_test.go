package task_test

import (
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/steward-run/steward/pkg/errs"
	"github.com/steward-run/steward/pkg/event"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/stewardtest"
	"github.com/steward-run/steward/pkg/task"
)

// permitWithSnapshot is a permit of a1 (dispatchedAction's hashes) that
// carries the snapshot it was decided under, as governance records an
// allow with nothing to wait for.
func permitWithSnapshot(permit, snap string, d stewardv1.PolicyDecision) *stewardv1.ActionPermitted {
	pm := newPermit(permit)
	pm.Permit.SnapshotId = snap
	pm.Snapshot = &stewardv1.PolicySnapshot{SnapshotId: snap, BundleRevision: "rev-1", Decision: d, Reasons: []string{"allowed"}}
	return pm
}

func proposedA1() *stewardv1.ActionProposed {
	return &stewardv1.ActionProposed{Action: &stewardv1.Action{ActionId: "a1", ActionHash: "ha1", RequestHash: "ra1", Tool: "charge", Target: "card"}}
}

// TestPermitCarryingItsSnapshotIsBothSteps folds a permit that carries its
// snapshot: the action is permitted under that snapshot, as after
// PolicyEvaluated then ActionPermitted, and runs on from there.
func TestPermitCarryingItsSnapshotIsBothSteps(t *testing.T) {
	one := permitWithSnapshot("p1", "s1", allow)
	tk, err := fold(t, []event.Payload{proposedA1(), one,
		&stewardv1.ActionClaimed{ActionId: "a1", PermitId: "p1", Worker: "w1"},
		dispatchUnder("p1", 1),
		&stewardv1.ActionOutcomeRecorded{ActionId: "a1", Outcome: &stewardv1.Outcome{Status: stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED, Attempt: 1}},
	})
	if err != nil {
		t.Fatal(err)
	}
	a := tk.Actions[0]
	if a.Status != stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED || a.Permit.GetPermitId() != "p1" || !proto.Equal(a.Snapshot, one.Snapshot) {
		t.Fatalf("action %v", a)
	}

	// The same as the two events it replaces.
	two, err := fold(t, []event.Payload{proposedA1(),
		&stewardv1.PolicyEvaluated{ActionId: "a1", Snapshot: one.Snapshot},
		&stewardv1.ActionPermitted{Permit: one.Permit},
	})
	if err != nil {
		t.Fatal(err)
	}
	combined, err := fold(t, []event.Payload{proposedA1(), one})
	if err != nil {
		t.Fatal(err)
	}
	got, want := combined.Actions[0], two.Actions[0]
	if got.Status != want.Status || !proto.Equal(got.Snapshot, want.Snapshot) || !proto.Equal(got.Permit, want.Permit) || combined.Status != two.Status {
		t.Fatalf("one event folds to %v, two to %v", got, want)
	}
}

// TestRevalidationPermitCarryingItsSnapshot folds a revalidation's new
// permit recorded with its fresh snapshot.
func TestRevalidationPermitCarryingItsSnapshot(t *testing.T) {
	tk, err := fold(t, firstDispatch(), one(
		retryWait(),
		revalidating("pa1", retryAfter),
		permitWithSnapshot("p2", "s2", allow),
		&stewardv1.ActionClaimed{ActionId: "a1", PermitId: "p2", Worker: "w2"},
		dispatchUnder("p2", 2),
	))
	if err != nil {
		t.Fatal(err)
	}
	a := tk.Actions[0]
	if a.Status != stewardv1.ActionStatus_ACTION_STATUS_DISPATCHED || a.Attempt != 2 || a.Permit.PermitId != "p2" || a.Snapshot.GetSnapshotId() != "s2" {
		t.Fatalf("action %v", a)
	}
}

// TestApprovedPermitCarryingItsSnapshot: after an approval, a fresh
// snapshot that allows may come with the permit too (governance records
// it alone, to weigh it against the approval first; the ledger takes
// either).
func TestApprovedPermitCarryingItsSnapshot(t *testing.T) {
	tk, err := fold(t, one(proposedA1(),
		snapshot("s1", askRoles, "authorizer"),
		&stewardv1.ApprovalRequested{Approval: &stewardv1.Approval{ApprovalId: "ap1", ActionId: "a1", ActionHash: "ha1", RequiredRoles: []string{"authorizer"}}},
		&stewardv1.ApprovalDecided{ApprovalId: "ap1", ActionId: "a1", ActionHash: "ha1", Decision: approve, DecidedBy: "user:bo"},
		permitWithSnapshot("p1", "s2", allow),
	))
	if err != nil {
		t.Fatal(err)
	}
	if a := tk.Actions[0]; a.Status != stewardv1.ActionStatus_ACTION_STATUS_PERMITTED || a.Snapshot.GetSnapshotId() != "s2" || a.Approval.GetDecidedBy() != "user:bo" {
		t.Fatalf("action %v", a)
	}
}

// TestPermitCarryingASnapshotIsRefusedWhenInconsistent checks every way a
// permit's carried snapshot can disagree with the permit or the ledger; a
// refused event leaves the task as it was.
func TestPermitCarryingASnapshotIsRefusedWhenInconsistent(t *testing.T) {
	otherID := permitWithSnapshot("p1", "s1", allow)
	otherID.Permit.SnapshotId = "s0"
	noID := permitWithSnapshot("p1", "", allow)
	badHash := permitWithSnapshot("p1", "s1", allow)
	badHash.Permit.ActionHash = "other"
	tests := []struct {
		name   string
		before []event.Payload
		next   *stewardv1.ActionPermitted
	}{
		{"a snapshot that denies", nil, permitWithSnapshot("p1", "s1", stewardv1.PolicyDecision_POLICY_DECISION_DENY)},
		{"a snapshot that asks for approval", nil, permitWithSnapshot("p1", "s1", askRoles)},
		{"the permit names another snapshot", nil, otherID},
		{"a snapshot with no id", nil, noID},
		{"the action's hashes differ", nil, badHash},
		{"the round was evaluated before", one(snapshot("s1", allow)), permitWithSnapshot("p1", "s1", allow)},
		{"evaluated before in another round", one(snapshot("s0", allow)), permitWithSnapshot("p1", "s1", allow)},
		{"permitted before", one(permitWithSnapshot("p1", "s1", allow)), permitWithSnapshot("p2", "s2", allow)},
		{"awaiting approval", one(snapshot("s1", askRoles), &stewardv1.ApprovalRequested{Approval: &stewardv1.Approval{ApprovalId: "ap1", ActionId: "a1", ActionHash: "ha1"}}), permitWithSnapshot("p1", "s2", allow)},
		{"the task was cancelled", one(cancelled()), permitWithSnapshot("p1", "s1", allow)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			events := append(append([]event.Payload{created(), started(), proposedA1()}, tt.before...), tt.next)
			recs := stewardtest.History(t, "t1", events...)
			tk, err := task.Fold(recs[:len(recs)-1])
			if err != nil {
				t.Fatal(err)
			}
			before := proto.CloneOf(tk)
			last := recs[len(recs)-1]
			err = task.Apply(tk, last.Event, last.Sequence)
			if !errs.Is(err, errs.FailedPrecondition) {
				t.Fatalf("err = %v, want failed precondition", err)
			}
			t.Log(err)
			if !proto.Equal(tk, before) {
				t.Fatalf("a refused permit changed the task:\n%v\nwas\n%v", tk, before)
			}
		})
	}
}

// TestRevalidationPermitCarryingARecordedSnapshotIsRefused: a snapshot
// already on the ledger for this revalidation is not recorded again with
// the permit.
func TestRevalidationPermitCarryingARecordedSnapshotIsRefused(t *testing.T) {
	_, err := fold(t, firstDispatch(), one(
		retryWait(),
		revalidating("pa1", retryAfter),
		snapshot("s2", allow),
		permitWithSnapshot("p2", "s2", allow),
	))
	if !errs.Is(err, errs.FailedPrecondition) {
		t.Fatalf("err = %v, want failed precondition", err)
	}
}
