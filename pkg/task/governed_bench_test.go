package task_test

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"testing"

	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/steward-run/steward/pkg/event"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/stewardtest"
	"github.com/steward-run/steward/pkg/task"
)

// BenchmarkFoldGovernedActions folds a task of 25 governed actions as
// the e2e benchmark runs them: proposed with an inline request, permitted
// with the snapshot and the signed permit, dispatched with its claim, and
// succeeded. Every fold of a plane and of a view pays this per event.
func BenchmarkFoldGovernedActions(b *testing.B) {
	const actions = 25
	evs := []event.Payload{created(), started()}
	for i := range actions {
		evs = append(evs, governedAction(fmt.Sprintf("act-%032d", i))...)
	}
	history := stewardtest.History(b, "t1", evs...)
	b.ResetTimer()
	for range b.N {
		if _, err := task.Fold(history); err != nil {
			b.Fatal(err)
		}
	}
}

// governedAction is the events of one governed action of a no-op tool
// under an auto-allow policy, with fields the size the planes write.
func governedAction(id string) []event.Payload {
	now := timestamppb.Now()
	request := []byte(`{"params":{},"target":"noop","tool":"noop","version":"1"}`)
	sum := sha256.Sum256(request)
	reqHash := hex.EncodeToString(sum[:])
	actionHash := hex.EncodeToString(sha256.New().Sum([]byte(id)))[:64]
	permit := &stewardv1.ActionPermit{PermitId: "permit-" + id, ActionId: id, ActionHash: actionHash, RequestHash: reqHash,
		SnapshotId: "snap-" + id, CredentialRef: "cred-0123456789", IssuedAt: now, ExpiresAt: now, SnapshotHash: reqHash}
	return []event.Payload{
		&stewardv1.ActionProposed{Action: &stewardv1.Action{ActionId: id, ProposalId: "p-" + id, Tool: "noop", ToolVersion: "1", Target: "noop",
			EffectClass: stewardv1.EffectClass_EFFECT_CLASS_READ, RequestHash: reqHash, ActionHash: actionHash, OpKey: "op-" + id,
			ProposedBy: "user:bench", Request: request, RetryPolicy: &stewardv1.RetryPolicy{MaxAttempts: 3}}},
		&stewardv1.ActionPermitted{Permit: permit,
			Snapshot: &stewardv1.PolicySnapshot{SnapshotId: "snap-" + id, BundleRevision: "rev-0123456789abcdef", InputHash: reqHash,
				Decision: stewardv1.PolicyDecision_POLICY_DECISION_ALLOW, Reasons: []string{"benchmark: allow all"}, EvaluatedAt: now},
			Signed: &stewardv1.SignedPermit{Permit: make([]byte, 300), Signature: make([]byte, 64), PublicKey: make([]byte, 32)}},
		&stewardv1.ActionDispatched{ActionId: id, Attempt: 1, PermitId: permit.PermitId, Worker: "worker-0123456789"},
		&stewardv1.ActionOutcomeRecorded{ActionId: id, Outcome: &stewardv1.Outcome{Status: stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED,
			Attempt: 1, FinishedAt: now, ResultRef: "result-" + id, ResultHash: reqHash}},
	}
}
