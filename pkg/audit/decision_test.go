package audit_test

import (
	"crypto/ed25519"
	"crypto/rand"
	"strings"
	"testing"

	"github.com/steward-run/steward/pkg/audit"
	"github.com/steward-run/steward/pkg/credential"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// TestVerifyChecksPermitAndDecisionSignatures: with trusted keys, a signed
// permit and approval decision verify and are counted; an unsigned one, one
// by another key, and a signed permit replayed onto another action break
// the replay there, naming it. Without keys nothing is checked.
func TestVerifyChecksPermitAndDecisionSignatures(t *testing.T) {
	_, key, _ := ed25519.GenerateKey(rand.Reader)
	_, otherKey, _ := ed25519.GenerateKey(rand.Reader)
	s, other := credential.NewSigner(key), credential.NewSigner(otherKey)
	action := func(id, hash string) *stewardv1.ActionProposed {
		return &stewardv1.ActionProposed{Action: &stewardv1.Action{ActionId: id, ActionHash: hash, RequestHash: "r", Tool: "wire"}}
	}
	snap := &stewardv1.PolicySnapshot{SnapshotId: "s1", Decision: stewardv1.PolicyDecision_POLICY_DECISION_REQUIRE_APPROVAL, RequiredApproverRoles: []string{"authorizer"}}
	approval := &stewardv1.ApprovalRequested{Approval: &stewardv1.Approval{ApprovalId: "ap1", ActionId: "a1", ActionHash: "h1", RequiredRoles: []string{"authorizer"}}}
	decided := func(signer *credential.Signer) *stewardv1.ApprovalDecided {
		d := &stewardv1.ApprovalDecided{ApprovalId: "ap1", ActionId: "a1", ActionHash: "h1", Decision: stewardv1.ApprovalDecision_APPROVAL_DECISION_APPROVE, DecidedBy: "user:bo"}
		if signer != nil {
			d.Signed, _ = signer.SignDecision(d)
		}
		return d
	}
	permitFor := func(id, hash string, signer *credential.Signer) *stewardv1.ActionPermitted {
		pm := &stewardv1.ActionPermitted{Permit: &stewardv1.ActionPermit{PermitId: "p-" + id, ActionId: id, ActionHash: hash, RequestHash: "r", SnapshotId: "s1"}}
		if signer != nil {
			pm.Signed, _ = signer.SignPermit(pm.Permit)
		}
		return pm
	}
	evaluated := &stewardv1.PolicyEvaluated{ActionId: "a1", Snapshot: snap}
	if err := credential.SignInto(s, evaluated); err != nil {
		t.Fatal(err)
	}
	if err := credential.SignInto(s, approval); err != nil {
		t.Fatal(err)
	}
	history := func(d *stewardv1.ApprovalDecided, pm *stewardv1.ActionPermitted) [][]byte {
		return sealed(t, "t1", &stewardv1.TaskCreated{}, &stewardv1.TaskStarted{}, action("a1", "h1"), evaluated, approval, d, pm)
	}

	rep := audit.Verify("t1", history(decided(s), permitFor("a1", "h1", s)), audit.WithDecisions(s.PublicKey()))
	if !rep.OK() || rep.Decisions != (audit.DecisionChecks{Permits: 1, Approvals: 1, Snapshots: 1, Requests: 1}) {
		t.Fatalf("a signed history: break %v, checked %+v", rep.Break, rep.Decisions)
	}
	if rep := audit.Verify("t1", history(decided(nil), permitFor("a1", "h1", nil))); !rep.OK() || rep.Decisions != (audit.DecisionChecks{}) {
		t.Errorf("without keys: break %v, checked %+v; want nothing checked", rep.Break, rep.Decisions)
	}
	// A permit signed for a2 and recorded for a1.
	replayed := permitFor("a2", "h2", s)
	replayed.Permit = permitFor("a1", "h1", nil).Permit
	for _, tc := range []struct {
		name  string
		d     *stewardv1.ApprovalDecided
		pm    *stewardv1.ActionPermitted
		index int
		want  string
	}{
		{"unsigned decision", decided(nil), permitFor("a1", "h1", s), 5, "approval decision on action a1 does not hold: approval decision of user:bo on ap1 is not signed"},
		{"decision by another key", decided(other), permitFor("a1", "h1", s), 5, "not trusted"},
		{"unsigned permit", decided(s), permitFor("a1", "h1", nil), 6, "permit of action a1 does not hold: permit p-a1 is not signed"},
		{"replayed permit", decided(s), replayed, 6, "was signed for action a2 with hash h2, not action a1 with hash h1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep := audit.Verify("t1", history(tc.d, tc.pm), audit.WithDecisions(s.PublicKey()))
			if rep.OK() || rep.Break.Index != tc.index || !strings.Contains(rep.Break.Reason, tc.want) {
				t.Errorf("break %+v, want one at event %d with %q", rep.Break, tc.index, tc.want)
			}
		})
	}
}

// TestVerifyChecksSnapshotAndRequestSignatures: with trusted keys, a
// policy snapshot or approval request unsigned, signed by another key, or
// changed after signing (its signature kept) breaks the replay there,
// naming the event and what does not hold.
func TestVerifyChecksSnapshotAndRequestSignatures(t *testing.T) {
	_, key, _ := ed25519.GenerateKey(rand.Reader)
	_, otherKey, _ := ed25519.GenerateKey(rand.Reader)
	s, other := credential.NewSigner(key), credential.NewSigner(otherKey)
	snapshot := func(signer *credential.Signer, change func(*stewardv1.PolicyEvaluated)) *stewardv1.PolicyEvaluated {
		pe := &stewardv1.PolicyEvaluated{ActionId: "a1", Snapshot: &stewardv1.PolicySnapshot{SnapshotId: "s1",
			Decision: stewardv1.PolicyDecision_POLICY_DECISION_REQUIRE_APPROVAL, RequiredApproverRoles: []string{"authorizer"}}}
		if signer != nil {
			pe.Signed, _ = credential.SignEvent(signer, pe)
		}
		change(pe)
		return pe
	}
	request := func(signer *credential.Signer, change func(*stewardv1.ApprovalRequested)) *stewardv1.ApprovalRequested {
		ar := &stewardv1.ApprovalRequested{Approval: &stewardv1.Approval{ApprovalId: "ap1", ActionId: "a1", ActionHash: "h1", RequiredRoles: []string{"authorizer"}, Tool: "wire"}}
		if signer != nil {
			ar.Signed, _ = credential.SignEvent(signer, ar)
		}
		change(ar)
		return ar
	}
	history := func(pe *stewardv1.PolicyEvaluated, ar *stewardv1.ApprovalRequested) [][]byte {
		return sealed(t, "t1", &stewardv1.TaskCreated{}, &stewardv1.TaskStarted{},
			&stewardv1.ActionProposed{Action: &stewardv1.Action{ActionId: "a1", ActionHash: "h1", RequestHash: "r", Tool: "wire"}}, pe, ar)
	}
	good := func(*stewardv1.PolicyEvaluated) {}
	goodRequest := request(s, func(*stewardv1.ApprovalRequested) {})
	if rep := audit.Verify("t1", history(snapshot(s, good), goodRequest), audit.WithDecisions(s.PublicKey())); !rep.OK() || rep.Decisions.Snapshots != 1 || rep.Decisions.Requests != 1 {
		t.Fatalf("a signed history: break %v, checked %+v", rep.Break, rep.Decisions)
	}
	for _, tc := range []struct {
		name  string
		pe    *stewardv1.PolicyEvaluated
		ar    *stewardv1.ApprovalRequested
		index int
		want  string
	}{
		{"unsigned snapshot", snapshot(nil, good), goodRequest, 3, "policy snapshot of action a1 does not hold: policy snapshot s1 of action a1 (POLICY_DECISION_REQUIRE_APPROVAL) is not signed"},
		{"snapshot by another key", snapshot(other, good), goodRequest, 3, "not trusted"},
		{"snapshot changed to allow", snapshot(s, func(pe *stewardv1.PolicyEvaluated) {
			pe.Snapshot.Decision = stewardv1.PolicyDecision_POLICY_DECISION_ALLOW
		}), goodRequest, 3,
			"policy snapshot s1 of action a1 (POLICY_DECISION_ALLOW) is not the one that was signed (signed: policy snapshot s1 of action a1 (POLICY_DECISION_REQUIRE_APPROVAL))"},
		{"unsigned request", snapshot(s, good), request(nil, func(*stewardv1.ApprovalRequested) {}), 4, "approval request ap1 does not hold: approval request ap1 (wire , hash h1) is not signed"},
		{"request showing other terms", snapshot(s, good), request(s, func(ar *stewardv1.ApprovalRequested) { ar.Approval.Tool = "search" }), 4,
			"approval request ap1 (search , hash h1) is not the one that was signed (signed: approval request ap1 (wire , hash h1))"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep := audit.Verify("t1", history(tc.pe, tc.ar), audit.WithDecisions(s.PublicKey()))
			if rep.OK() || rep.Break.Index != tc.index || !strings.Contains(rep.Break.Reason, tc.want) {
				t.Errorf("break %+v, want one at event %d with %q", rep.Break, tc.index, tc.want)
			}
		})
	}
}
