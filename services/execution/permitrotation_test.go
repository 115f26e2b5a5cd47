package execution_test

import (
	"crypto/ed25519"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/steward-run/steward/pkg/credential"
	"github.com/steward-run/steward/pkg/event"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/services/execution"
	"github.com/steward-run/steward/services/execution/breaker"
)

// TestPermitKeyRotation walks the rotation docs/keys.md gives for the
// permit key on workers. A worker verifying with the old key alone runs a
// permit it signed. While the worker is down, a permit signed with the old
// key waits on the log (in flight across the change) and governance,
// rotated, signs the next with the new key; the worker restarted with both
// keys (--permit-key new --permit-key old) runs both. Once the old key is
// dropped, a permit it signed is refused, never run.
func TestPermitKeyRotation(t *testing.T) {
	ts := startTool(t)
	b := newHarness(t, breaker.Config{})
	b.register(ts, "charge", false, nil)
	b.plane.Stop()
	oldKey, newKey := newKey(t), newKey(t)
	refused := b.recordRefusals(t)
	permitted := func(taskID string, s *credential.Signer) *stewardv1.Action {
		b.Append(taskID, &stewardv1.TaskCreated{Contract: &stewardv1.TaskContract{TaskId: taskID, Intent: "test", AllowedTools: []string{"charge"}}}, &stewardv1.TaskStarted{})
		a, pm := b.allow(taskID, "p1", "charge", "card-"+taskID)
		signed, err := s.SignPermit(pm.Permit)
		if err != nil {
			t.Fatal(err)
		}
		pm.Signed = signed
		b.Append(taskID, pm)
		return a
	}
	restart := func(keys ...ed25519.PublicKey) {
		b.plane.Stop()
		b.cfg.PermitKeys = keys
		b.start()
	}

	restart(oldKey.PublicKey())
	before := permitted("t-before", oldKey)
	b.WaitAction("t-before", before.ActionId, status(succeededS))

	b.plane.Stop()
	inFlight := permitted("t-in-flight", oldKey)
	rotated := permitted("t-rotated", newKey)
	restart(newKey.PublicKey(), oldKey.PublicKey())
	b.WaitAction("t-in-flight", inFlight.ActionId, status(succeededS))
	b.WaitAction("t-rotated", rotated.ActionId, status(succeededS))

	restart(newKey.PublicKey())
	late := permitted("t-late", oldKey)
	refused("not trusted")
	b.Settle(execution.PlaneName)
	if got := b.WaitAction("t-late", late.ActionId, func(*stewardv1.Action) bool { return true }); got.Status != stewardv1.ActionStatus_ACTION_STATUS_PERMITTED {
		t.Errorf("a permit of the dropped key left its action %v; want it permitted, not run", got.Status)
	}
	if n := b.Count("t-late", event.TypeActionDispatched); n != 0 || ts.Calls() != 3 {
		t.Errorf("%d dispatches under the dropped key, %d calls; want none, and the three permitted calls", n, ts.Calls())
	}
}

// TestAPermitOfADroppedKeyIsDecidedAgainAtItsExpiry: a permit signed by a
// key the worker no longer trusts is never claimed, but it does not strand
// its action: once the permit is past its expiry (one waiting through a
// pause or the rotation, or one that expires while refused), execution
// sends it back to governance as any expired permit, which decides again
// and signs with the key it holds now.
func TestAPermitOfADroppedKeyIsDecidedAgainAtItsExpiry(t *testing.T) {
	ts := startTool(t)
	b := newHarness(t, breaker.Config{})
	b.register(ts, "charge", false, nil)
	oldKey, newKey := newKey(t), newKey(t)
	b.plane.Stop()
	b.cfg.PermitKeys = []ed25519.PublicKey{newKey.PublicKey()}
	refused := b.recordRefusals(t)
	b.start()
	for _, tc := range []struct {
		taskID  string
		expires time.Time
	}{{"t-expired", time.Now().Add(-time.Second)}, {"t-expiring", time.Now().Add(time.Second)}} {
		b.Append(tc.taskID, &stewardv1.TaskCreated{Contract: &stewardv1.TaskContract{TaskId: tc.taskID, Intent: "test", AllowedTools: []string{"charge"}}}, &stewardv1.TaskStarted{})
		a, pm := b.allow(tc.taskID, "p1", "charge", "card-"+tc.taskID)
		pm.Permit.ExpiresAt = timestamppb.New(tc.expires)
		signed, err := oldKey.SignPermit(pm.Permit)
		if err != nil {
			t.Fatal(err)
		}
		pm.Signed = signed
		b.Append(tc.taskID, pm)
		refused("not trusted")
		got := b.WaitAction(tc.taskID, a.ActionId, func(a *stewardv1.Action) bool { return a.LastRevalidation != 0 })
		if got.LastRevalidation != stewardv1.RevalidationReason_REVALIDATION_REASON_EXPIRED || b.Count(tc.taskID, event.TypeActionDispatched) != 0 {
			t.Errorf("%s: revalidated for %v, %d dispatches; want expired, none", tc.taskID, got.LastRevalidation, b.Count(tc.taskID, event.TypeActionDispatched))
		}
	}
	if ts.Calls() != 0 {
		t.Errorf("%d calls under a dropped key", ts.Calls())
	}
}
