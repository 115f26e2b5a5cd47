package governance_test

import (
	"context"
	"testing"

	"github.com/steward-run/steward/pkg/credential"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/policystore"
	"github.com/steward-run/steward/pkg/task"
	"github.com/steward-run/steward/services/governance/policy"
)

// TestWhatPolicyDecidedWithIsKept: by the time a snapshot is on the log,
// its full canonical input is in the policy store under the snapshot's
// input_hash, and the sources of the revision that decided it — which
// hash to that revision, with this binary's OPA version — are there too;
// re-evaluating the input under them decides as the snapshot says. The
// snapshot says, in its bytes, that its input is kept, and its permit
// names its hash.
func TestWhatPolicyDecidedWithIsKept(t *testing.T) {
	e := newHarness(t)
	e.start(t, withoutSigner)
	e.create(t, "kept", "user:ana", credContract([]string{"search"}, nil))
	id := e.propose(t, "kept", "s1", "search")
	e.waitStatus("kept", id, stewardv1.ActionStatus_ACTION_STATUS_PERMITTED)
	ctx := context.Background()
	tk, _, err := e.Tasks.Load(ctx, "kept")
	if err != nil {
		t.Fatal(err)
	}
	a := task.FindAction(tk, id)
	snap := a.Snapshot
	if !snap.InputKept || a.Permit.SnapshotHash != credential.SnapshotHash(snap) {
		t.Errorf("snapshot %s says input_kept %v; its permit names snapshot hash %q", snap.SnapshotId, snap.InputKept, a.Permit.SnapshotHash)
	}
	input, ok, err := e.Policy.Input(ctx, "kept", snap.InputHash)
	if err != nil || !ok || policystore.InputHash(input) != snap.InputHash {
		t.Fatalf("the input of snapshot %s: %v, %v", snap.SnapshotId, ok, err)
	}
	src, ok, err := e.Policy.Sources(ctx, snap.BundleRevision)
	if err != nil || !ok || src.OpaVersion != policy.OPAVersion() || len(src.Files) == 0 {
		t.Fatalf("the sources of revision %s: %v, %v, %v", snap.BundleRevision, src, ok, err)
	}
	engine, err := policy.Restore(ctx, src)
	if err != nil {
		t.Fatal(err)
	}
	res, err := engine.EvaluateAt(ctx, input, snap.EvaluatedAt.AsTime(), false)
	if err != nil || res.Revision != snap.BundleRevision || res.Decision != "allow" || snap.Decision != stewardv1.PolicyDecision_POLICY_DECISION_ALLOW {
		t.Errorf("re-evaluated: %+v, %v; the snapshot says %s", res, err, snap.Decision)
	}
}
