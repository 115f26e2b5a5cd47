package auditbundle

import (
	"context"
	"strings"
	"testing"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// TestRevisionSnapshotIsCountedAndSaid: governance's judgement of a
// contract revision is a policy decision on the record like a plan's. Its
// input is not kept yet, so it is not re-evaluated; the report must count
// it and say so, not pass over it as if the bundle held no such decision.
func TestRevisionSnapshotIsCountedAndSaid(t *testing.T) {
	ev := &stewardv1.Event{EventId: "e-judged", TaskId: "t1", Payload: &stewardv1.Event_ContractRevisionEvaluated{
		ContractRevisionEvaluated: &stewardv1.ContractRevisionEvaluated{RevisionId: "rev-1", ContractHash: "h", Snapshot: &stewardv1.PolicySnapshot{
			SnapshotId: "rsnap-1", BundleRevision: "b1", Decision: stewardv1.PolicyDecision_POLICY_DECISION_ALLOW}}}}
	r := &Report{}
	checkPolicy(context.Background(), &stewardv1.AuditBundle{}, []*bundleTask{{id: "t1", recs: []*stewardv1.EventRecord{{Event: ev}}}}, Checks{}, r)
	if r.Snapshots != 1 {
		t.Fatalf("snapshots counted = %d, want the revision's 1", r.Snapshots)
	}
	said := false
	for _, n := range r.Notes {
		said = said || strings.Contains(n, "rsnap-1") && strings.Contains(n, "contract revision rev-1") && strings.Contains(n, "not re-evaluated")
	}
	if !said || !r.OK() {
		t.Fatalf("notes %q, failures %v: want a note that revision rev-1's snapshot is not re-evaluated, and no failure", r.Notes, r.Failures)
	}
}
