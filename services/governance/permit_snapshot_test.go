package governance_test

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/steward-run/steward/pkg/event"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/services/governance"
)

// TestAnAllowIsRecordedWithItsPermit: policy allows a proposal and nothing
// holds the permit back, so the snapshot and the permit are one event.
// The proposal redelivered (a second plane from the start of the log)
// evaluates nothing again and issues no second permit.
func TestAnAllowIsRecordedWithItsPermit(t *testing.T) {
	e := newHarness(t)
	var evaluations atomic.Int32
	e.onEvaluate = func() { evaluations.Add(1) }
	e.start(t)
	e.create(t, "one", "agent:a", credContract([]string{"search"}, nil))
	id := e.propose(t, "one", "p1", "search")
	a := e.waitStatus("one", id, stewardv1.ActionStatus_ACTION_STATUS_PERMITTED)
	e.Settle(governance.PlaneName)

	if a.Snapshot.GetDecision() != stewardv1.PolicyDecision_POLICY_DECISION_ALLOW || a.Permit.SnapshotId != a.Snapshot.SnapshotId {
		t.Fatalf("permit under %s, snapshot %v", a.Permit.SnapshotId, a.Snapshot)
	}
	check := func(when string) {
		t.Helper()
		n := e.counts(t, "one")
		if n[event.TypePolicyEvaluated] != 0 || n[event.TypeActionPermitted] != 1 || n[event.TypeActionDenied] != 0 {
			t.Fatalf("%s: %d snapshots alone, %d permits, %d denials; want one permit carrying its snapshot", when,
				n[event.TypePolicyEvaluated], n[event.TypeActionPermitted], n[event.TypeActionDenied])
		}
		if all, _ := e.snapshots(t, "one"); all != 1 {
			t.Fatalf("%s: %d snapshots, want 1", when, all)
		}
		if got := evaluations.Load(); got != 1 {
			t.Fatalf("%s: policy evaluated %d times, want once", when, got)
		}
	}
	check("first delivery")

	e.redeliver(t)
	check("after redelivery")
}

// TestAnAllowRefusedAtTheWriteRecordsTheSnapshotThenTheDenial: the task's
// credential is revoked while policy evaluates a proposal it allows. The
// write that would have recorded the permit with its snapshot finds the
// revocation, records the snapshot alone, and the denial follows it: the
// ledger shows what policy said, then why no permit came.
func TestAnAllowRefusedAtTheWriteRecordsTheSnapshotThenTheDenial(t *testing.T) {
	e := newHarness(t)
	var (
		first      sync.Once
		evaluating = make(chan struct{})
		resume     = make(chan struct{})
	)
	e.onEvaluate = func() { first.Do(func() { close(evaluating); <-resume }) }
	e.start(t)
	e.create(t, "revoked", "agent:a", credContract([]string{"search"}, nil))
	cred := e.credentialed("revoked").Credential
	id := e.propose(t, "revoked", "p1", "search")
	select {
	case <-evaluating:
	case <-time.After(30 * time.Second):
		close(resume)
		t.Fatal("policy was never evaluated")
	}
	e.Append("revoked", &stewardv1.CredentialRevoked{CredentialId: cred.CredentialId, Reason: "key leaked"})
	close(resume)

	a := e.waitStatus("revoked", id, stewardv1.ActionStatus_ACTION_STATUS_DENIED)
	if !strings.Contains(denialOf(a), "revoked") || a.Snapshot.GetDecision() != stewardv1.PolicyDecision_POLICY_DECISION_ALLOW {
		t.Fatalf("denied for %q under %v; want the revocation named, after policy's allow", denialOf(a), a.Snapshot)
	}
	recs, err := e.Log.Read(context.Background(), "revoked")
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	for _, r := range recs {
		switch r.Event.Type {
		case event.TypePolicyEvaluated, event.TypeActionPermitted, event.TypeActionDenied:
			order = append(order, r.Event.Type)
		}
	}
	if got := strings.Join(order, ", "); got != event.TypePolicyEvaluated+", "+event.TypeActionDenied {
		t.Fatalf("governance recorded %s; want the snapshot, then the denial", got)
	}
}
