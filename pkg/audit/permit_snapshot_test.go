package audit_test

import (
	"strings"
	"testing"

	"github.com/steward-run/steward/pkg/audit"
	"github.com/steward-run/steward/pkg/event"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// TestVerifyReadsASnapshotRecordedWithItsPermit: an auditor folds a permit
// that carries its snapshot as both steps, and breaks at one whose snapshot
// did not allow the action. A ledger of the older shape (the snapshot
// alone, then the permit) verifies as before.
func TestVerifyReadsASnapshotRecordedWithItsPermit(t *testing.T) {
	proposed := &stewardv1.ActionProposed{Action: &stewardv1.Action{ActionId: "a1", ActionHash: "h1", RequestHash: "r1", Tool: "search"}}
	permitted := func(d stewardv1.PolicyDecision) *stewardv1.ActionPermitted {
		return &stewardv1.ActionPermitted{
			Permit:   &stewardv1.ActionPermit{PermitId: "p1", ActionId: "a1", ActionHash: "h1", RequestHash: "r1", SnapshotId: "s1"},
			Snapshot: &stewardv1.PolicySnapshot{SnapshotId: "s1", BundleRevision: "rev-1", Decision: d},
		}
	}
	run := func(payloads ...event.Payload) *audit.Report {
		all := append([]event.Payload{&stewardv1.TaskCreated{}, &stewardv1.TaskStarted{}, proposed}, payloads...)
		return audit.Verify("t1", sealed(t, "t1", all...))
	}

	rep := run(permitted(stewardv1.PolicyDecision_POLICY_DECISION_ALLOW), &stewardv1.ActionClaimed{ActionId: "a1", PermitId: "p1", Worker: "w"})
	if a := rep.Task.GetActions()[0]; !rep.OK() || a.Status != stewardv1.ActionStatus_ACTION_STATUS_CLAIMED || a.Snapshot.GetBundleRevision() != "rev-1" {
		t.Fatalf("report %+v, action %v", rep.Break, a)
	}

	rep = run(permitted(stewardv1.PolicyDecision_POLICY_DECISION_DENY))
	if rep.OK() || rep.Break.Index != 3 || !strings.Contains(rep.Break.Reason, "not allow") {
		t.Fatalf("a permit under a denying snapshot: break %+v, want one at event 3", rep.Break)
	}

	old := permitted(stewardv1.PolicyDecision_POLICY_DECISION_ALLOW)
	rep = run(&stewardv1.PolicyEvaluated{ActionId: "a1", Snapshot: old.Snapshot}, &stewardv1.ActionPermitted{Permit: old.Permit})
	if a := rep.Task.GetActions()[0]; !rep.OK() || rep.Events != 5 || a.Status != stewardv1.ActionStatus_ACTION_STATUS_PERMITTED || a.Snapshot.GetSnapshotId() != "s1" {
		t.Fatalf("the older shape: report %+v, action %v", rep.Break, a)
	}
}
