package governance_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/steward-run/steward/pkg/event"
	"github.com/steward-run/steward/pkg/eventlog"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/task"
	"github.com/steward-run/steward/services/governance"
)

// used writes what execution records when a permitted action is claimed,
// dispatched once and fails transiently, then finds its permit used: the
// retry goes back to governance.
func (e *credEnv) used(t *testing.T, taskID, actionID, permitID string, attempt uint32) {
	t.Helper()
	e.do(t, taskID, &stewardv1.ActionClaimed{ActionId: actionID, PermitId: permitID, Worker: "w1"})
	e.do(t, taskID, &stewardv1.ActionDispatched{ActionId: actionID, Attempt: attempt, Worker: "w1", PermitId: permitID})
	e.do(t, taskID, &stewardv1.ActionWaiting{ActionId: actionID, Kind: stewardv1.WaitKind_WAIT_KIND_RETRY, Until: timestamppb.Now(), NextAttempt: attempt + 1})
	e.do(t, taskID, &stewardv1.ActionRevalidating{ActionId: actionID, PermitId: permitID, Reason: stewardv1.RevalidationReason_REVALIDATION_REASON_RETRY, Detail: "test"})
}

// TestEachRevalidationGetsItsOwnSnapshotAndPermit: a revalidation that
// policy still allows gets a new snapshot and a new permit, expiring a TTL
// after its issue; the next revalidation, of that permit, gets others
// again. Nothing is recorded twice.
func TestEachRevalidationGetsItsOwnSnapshotAndPermit(t *testing.T) {
	e := newCredEnv(t)
	e.start(t, governance.WithPermitTTL(3*time.Minute))
	e.create(t, "t-reval", "agent:a", credContract([]string{"search"}, nil))
	id := e.propose(t, "t-reval", "p1", "search")
	first := e.waitAction(t, "t-reval", id, stewardv1.ActionStatus_ACTION_STATUS_PERMITTED)
	if ttl := first.Permit.ExpiresAt.AsTime().Sub(first.Permit.IssuedAt.AsTime()); ttl != 3*time.Minute {
		t.Fatalf("permit lasts %s, want the 3m TTL", ttl)
	}

	e.used(t, "t-reval", id, first.Permit.PermitId, 1)
	second := e.waitTask(t, "t-reval", "a second permit", func(tk *stewardv1.Task) bool {
		a := findAction(tk, id)
		return a.GetStatus() == stewardv1.ActionStatus_ACTION_STATUS_PERMITTED && a.Permit.PermitId != first.Permit.PermitId
	})
	a2 := findAction(second, id)
	if a2.Snapshot.SnapshotId == first.Snapshot.SnapshotId || a2.Permit.SnapshotId != a2.Snapshot.SnapshotId || a2.Attempt != 1 {
		t.Fatalf("after the revalidation: snapshot %s (was %s), permit under %s, attempt %d", a2.Snapshot.SnapshotId, first.Snapshot.SnapshotId, a2.Permit.SnapshotId, a2.Attempt)
	}

	e.used(t, "t-reval", id, a2.Permit.PermitId, 2)
	third := e.waitTask(t, "t-reval", "a third permit", func(tk *stewardv1.Task) bool {
		a := findAction(tk, id)
		return a.GetStatus() == stewardv1.ActionStatus_ACTION_STATUS_PERMITTED && a.Permit.PermitId != a2.Permit.PermitId
	})
	if a3 := findAction(third, id); a3.Permit.PermitId == first.Permit.PermitId || a3.Snapshot.SnapshotId == a2.Snapshot.SnapshotId {
		t.Fatalf("the second revalidation reused permit %s or snapshot %s", a3.Permit.PermitId, a3.Snapshot.SnapshotId)
	}
	if n := countType(t, e.log, "t-reval", event.TypePolicyEvaluated); n != 3 {
		t.Errorf("%d snapshots, want 3: the proposal's and one per revalidation", n)
	}
	if n := countType(t, e.log, "t-reval", event.TypeActionPermitted); n != 3 {
		t.Errorf("%d permits, want 3", n)
	}
}

// TestRevalidationUnderARevokedCredentialIsDeniedAndCharged: the task's
// credential was revoked while the action waited to retry. The
// revalidation still takes a snapshot, then denies the action for the
// credential, charging the call already made at the tool's price.
func TestRevalidationUnderARevokedCredentialIsDeniedAndCharged(t *testing.T) {
	e := newCredEnv(t)
	paid := &stewardv1.ToolContract{Name: "paid", Version: "1", EffectClass: stewardv1.EffectClass_EFFECT_CLASS_READ,
		DataSensitivity: stewardv1.DataSensitivity_DATA_SENSITIVITY_INTERNAL, CostMicrosPerCall: 70}
	ev, err := event.New(event.Meta{ID: event.ID("tool", "paid", "1")}, &stewardv1.ToolRegistered{Contract: paid})
	if err == nil {
		_, err = e.log.Append(context.Background(), eventlog.Head{}, ev)
	}
	if err != nil {
		t.Fatal(err)
	}
	credTools = append(credTools, paid)
	t.Cleanup(func() { credTools = credTools[:len(credTools)-1] })
	e.start(t)
	e.create(t, "t-revoked", "agent:a", credContract([]string{"paid"}, nil))
	id := e.propose(t, "t-revoked", "p1", "paid")
	first := e.waitAction(t, "t-revoked", id, stewardv1.ActionStatus_ACTION_STATUS_PERMITTED)
	cred := e.credentialed(t, "t-revoked").Credential

	e.do(t, "t-revoked", &stewardv1.ActionClaimed{ActionId: id, PermitId: first.Permit.PermitId, Worker: "w1"})
	e.do(t, "t-revoked", &stewardv1.ActionDispatched{ActionId: id, Attempt: 1, Worker: "w1", PermitId: first.Permit.PermitId})
	e.do(t, "t-revoked", &stewardv1.ActionWaiting{ActionId: id, Kind: stewardv1.WaitKind_WAIT_KIND_RETRY, Until: timestamppb.Now(), NextAttempt: 2})
	e.do(t, "t-revoked", &stewardv1.CredentialRevoked{CredentialId: cred.CredentialId, Reason: "key leaked"})
	e.do(t, "t-revoked", &stewardv1.ActionRevalidating{ActionId: id, PermitId: first.Permit.PermitId, Reason: stewardv1.RevalidationReason_REVALIDATION_REASON_RETRY})

	a := e.waitAction(t, "t-revoked", id, stewardv1.ActionStatus_ACTION_STATUS_DENIED)
	if a.Snapshot.SnapshotId == first.Snapshot.SnapshotId {
		t.Errorf("denied under the old snapshot %s; want a new one", a.Snapshot.SnapshotId)
	}
	if a.Outcome.CostMicros != 70 || a.Outcome.Attempt != 1 {
		t.Errorf("denial %v; want the one call charged at 70", a.Outcome)
	}
	if !strings.Contains(denialOf(a), "revoked") || countType(t, e.log, "t-revoked", event.TypeActionPermitted) != 1 {
		t.Errorf("denied for %q; want the revocation named, and no second permit", denialOf(a))
	}
}

func findAction(tk *stewardv1.Task, id string) *stewardv1.Action { return task.FindAction(tk, id) }
