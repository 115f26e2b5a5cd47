package governance_test

import (
	"strings"
	"testing"
	"time"

	"github.com/steward-run/steward/pkg/event"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/services/governance"
)

// TestEachRevalidationGetsItsOwnSnapshotAndPermit: a revalidation that
// policy still allows gets a new snapshot and a new permit, expiring a TTL
// after its issue; the next revalidation, of that permit, gets others
// again. Nothing is recorded twice.
func TestEachRevalidationGetsItsOwnSnapshotAndPermit(t *testing.T) {
	e := newHarness(t)
	e.start(t, func(c *governance.Config) { c.PermitTTL = 3 * time.Minute })
	e.create(t, "t-reval", "agent:a", credContract([]string{"search"}, nil))
	id := e.propose(t, "t-reval", "p1", "search")
	first := e.waitStatus("t-reval", id, stewardv1.ActionStatus_ACTION_STATUS_PERMITTED)
	if ttl := first.Permit.ExpiresAt.AsTime().Sub(first.Permit.IssuedAt.AsTime()); ttl != 3*time.Minute {
		t.Fatalf("permit lasts %s, want the 3m TTL", ttl)
	}

	e.used(t, "t-reval", id, first.Permit.PermitId, 1)
	second := e.WaitTask("t-reval", func(tk *stewardv1.Task) bool {
		a := findAction(tk, id)
		return a.GetStatus() == stewardv1.ActionStatus_ACTION_STATUS_PERMITTED && a.Permit.PermitId != first.Permit.PermitId
	})
	a2 := findAction(second, id)
	if a2.Snapshot.SnapshotId == first.Snapshot.SnapshotId || a2.Permit.SnapshotId != a2.Snapshot.SnapshotId || a2.Attempt != 1 {
		t.Fatalf("after the revalidation: snapshot %s (was %s), permit under %s, attempt %d", a2.Snapshot.SnapshotId, first.Snapshot.SnapshotId, a2.Permit.SnapshotId, a2.Attempt)
	}

	e.used(t, "t-reval", id, a2.Permit.PermitId, 2)
	third := e.WaitTask("t-reval", func(tk *stewardv1.Task) bool {
		a := findAction(tk, id)
		return a.GetStatus() == stewardv1.ActionStatus_ACTION_STATUS_PERMITTED && a.Permit.PermitId != a2.Permit.PermitId
	})
	if a3 := findAction(third, id); a3.Permit.PermitId == first.Permit.PermitId || a3.Snapshot.SnapshotId == a2.Snapshot.SnapshotId {
		t.Fatalf("the second revalidation reused permit %s or snapshot %s", a3.Permit.PermitId, a3.Snapshot.SnapshotId)
	}
	// Each allow is recorded with its permit: one event, not two.
	if n, alone := e.snapshots(t, "t-reval"); n != 3 || alone != 0 {
		t.Errorf("%d snapshots (%d alone), want 3, each with its permit: the proposal's and one per revalidation", n, alone)
	}
	if n := e.Count("t-reval", event.TypeActionPermitted); n != 3 {
		t.Errorf("%d permits, want 3", n)
	}
}

// TestRevalidationUnderARevokedCredentialIsDeniedAndCharged: the task's
// credential was revoked while the action waited to retry. The
// revalidation still takes a snapshot, then denies the action for the
// credential, charging the call already made at the tool's price.
func TestRevalidationUnderARevokedCredentialIsDeniedAndCharged(t *testing.T) {
	e := newHarness(t)
	e.register(t, paidTool)
	e.start(t)
	e.create(t, "t-revoked", "agent:a", credContract([]string{"paid"}, nil))
	id := e.propose(t, "t-revoked", "p1", "paid")
	first := e.waitStatus("t-revoked", id, stewardv1.ActionStatus_ACTION_STATUS_PERMITTED)
	cred := e.credentialed("t-revoked").Credential

	e.used(t, "t-revoked", id, first.Permit.PermitId, 1, &stewardv1.CredentialRevoked{CredentialId: cred.CredentialId, Reason: "key leaked"})

	a := e.waitStatus("t-revoked", id, stewardv1.ActionStatus_ACTION_STATUS_DENIED)
	if a.Snapshot.SnapshotId == first.Snapshot.SnapshotId {
		t.Errorf("denied under the old snapshot %s; want a new one", a.Snapshot.SnapshotId)
	}
	if a.Outcome.CostMicros != 70 || a.Outcome.Attempt != 1 {
		t.Errorf("denial %v; want the one call charged at 70", a.Outcome)
	}
	if !strings.Contains(denialOf(a), "revoked") || e.Count("t-revoked", event.TypeActionPermitted) != 1 {
		t.Errorf("denied for %q; want the revocation named, and no second permit", denialOf(a))
	}
}
