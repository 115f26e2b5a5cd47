package audit_test

import (
	"crypto/ed25519"
	"crypto/rand"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/steward-run/steward/pkg/audit"
	"github.com/steward-run/steward/pkg/credential"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// TestPermitBindsItsSnapshot: a permit names, in its signed bytes, the
// hash of the snapshot it was decided under, so the snapshot carried
// beside it cannot be changed (its input, revision or decision) without
// breaking the replay at the permit. A permit signed before permits named
// it (UnboundSnapshot) still holds.
func TestPermitBindsItsSnapshot(t *testing.T) {
	_, key, _ := ed25519.GenerateKey(rand.Reader)
	s := credential.NewSigner(key)
	snap := &stewardv1.PolicySnapshot{SnapshotId: "s1", BundleRevision: "rev-1", InputHash: "in-1", Decision: stewardv1.PolicyDecision_POLICY_DECISION_ALLOW, InputKept: true}
	permitted := func(bound bool, edit func(*stewardv1.PolicySnapshot)) *stewardv1.ActionPermitted {
		pm := &stewardv1.ActionPermitted{Permit: &stewardv1.ActionPermit{PermitId: "p1", ActionId: "a1", ActionHash: "h1", RequestHash: "r1", SnapshotId: "s1"}, Snapshot: proto.CloneOf(snap)}
		if bound {
			pm.Permit.SnapshotHash = credential.SnapshotHash(snap)
		}
		pm.Signed, _ = s.SignPermit(pm.Permit)
		edit(pm.Snapshot)
		return pm
	}
	run := func(pm *stewardv1.ActionPermitted) *audit.Report {
		proposed := &stewardv1.ActionProposed{Action: &stewardv1.Action{ActionId: "a1", ActionHash: "h1", RequestHash: "r1", Tool: "search"}}
		return audit.Verify("t1", sealed(t, "t1", &stewardv1.TaskCreated{}, &stewardv1.TaskStarted{}, proposed, pm), audit.WithDecisions(s.PublicKey()))
	}
	if rep := run(permitted(true, func(*stewardv1.PolicySnapshot) {})); !rep.OK() || rep.Decisions.Permits != 1 {
		t.Fatalf("a bound snapshot: break %+v", rep.Break)
	}
	for name, edit := range map[string]func(*stewardv1.PolicySnapshot){
		"input":     func(s *stewardv1.PolicySnapshot) { s.InputHash = "forged" },
		"revision":  func(s *stewardv1.PolicySnapshot) { s.BundleRevision = "rev-2" },
		"reasons":   func(s *stewardv1.PolicySnapshot) { s.Reasons = []string{"forged"} },
		"kept":      func(s *stewardv1.PolicySnapshot) { s.InputKept = false },
		"approvals": func(s *stewardv1.PolicySnapshot) { s.RequiredApprovals = 3 },
	} {
		t.Run(name, func(t *testing.T) {
			rep := run(permitted(true, edit))
			if rep.OK() || rep.Break.Index != 3 || !strings.Contains(rep.Break.Reason, "was signed for a snapshot hashing to") {
				t.Errorf("the carried snapshot's %s changed: break %+v, want one at the permit", name, rep.Break)
			}
		})
	}
	if rep := run(permitted(false, func(s *stewardv1.PolicySnapshot) { s.InputHash = "other" })); !rep.OK() {
		t.Errorf("a permit that names no snapshot hash (UnboundSnapshot): break %+v", rep.Break)
	}
}
