package credential_test

import (
	"crypto/ed25519"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/steward-run/steward/pkg/credential"
	"github.com/steward-run/steward/pkg/errs"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

func snapshotEvent() *stewardv1.PolicyEvaluated {
	return &stewardv1.PolicyEvaluated{ActionId: "act-1", Snapshot: &stewardv1.PolicySnapshot{
		SnapshotId: "snap-1", BundleRevision: "rev-1", Decision: stewardv1.PolicyDecision_POLICY_DECISION_REQUIRE_APPROVAL,
		RequiredApproverRoles: []string{"authorizer"}, RequiredApprovals: 1, EvaluatedAt: timestamppb.New(now)}}
}

func requestEvent() *stewardv1.ApprovalRequested {
	return &stewardv1.ApprovalRequested{Approval: &stewardv1.Approval{
		ApprovalId: "ap-1", TaskId: "t-1", ActionId: "act-1", ActionHash: "hash-1", RequiredRoles: []string{"authorizer"},
		Tool: "wire", ToolVersion: "1", Target: "acct:9", ParametersJson: `{"amount":100}`, RequestedAt: timestamppb.New(now)}}
}

// TestSignAndVerifyEvents: each payload governance signs verifies as
// signed, and any field changed after signing, a flipped signature byte,
// another type's signature and an untrusted key are each refused.
func TestSignAndVerifyEvents(t *testing.T) {
	s, other := newSigner(t), newSigner(t)
	snap, req := snapshotEvent(), requestEvent()
	plan := &stewardv1.PlanEvaluated{Version: 2, PlanHash: "plan-1", Snapshot: snapshotEvent().Snapshot}
	var err error
	for _, sign := range []func() error{
		func() (err error) { snap.Signed, err = credential.SignEvent(s, snap); return },
		func() (err error) { req.Signed, err = credential.SignEvent(s, req); return },
		func() (err error) { plan.Signed, err = credential.SignEvent(s, plan); return },
	} {
		if err = sign(); err != nil {
			t.Fatal(err)
		}
	}
	for name, err := range map[string]error{
		"snapshot": credential.VerifyEvent(snap, s.PublicKey()),
		"request":  credential.VerifyEvent(req, s.PublicKey()),
		"plan":     credential.VerifyEvent(plan, s.PublicKey()),
		"no trust": credential.VerifyEvent(snap),
	} {
		if err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	byOther, _ := credential.SignEvent(other, snapshotEvent())
	for _, tc := range []struct {
		name string
		err  func() error
		want string
	}{
		{"snapshot: another decision", func() error {
			m := proto.CloneOf(snap)
			m.Snapshot.Decision = stewardv1.PolicyDecision_POLICY_DECISION_ALLOW
			return credential.VerifyEvent(m, s.PublicKey())
		}, "is not the one that was signed"},
		{"snapshot: another action", func() error {
			m := proto.CloneOf(snap)
			m.ActionId = "act-2"
			return credential.VerifyEvent(m, s.PublicKey())
		}, "is not the one that was signed"},
		{"request: other terms shown", func() error {
			m := proto.CloneOf(req)
			m.Approval.Tool, m.Approval.ParametersJson = "search", `{"q":"x"}`
			return credential.VerifyEvent(m, s.PublicKey())
		}, "is not the one that was signed"},
		{"plan: another hash", func() error {
			m := proto.CloneOf(plan)
			m.PlanHash = "plan-2"
			return credential.VerifyEvent(m, s.PublicKey())
		}, "is not the one that was signed"},
		{"unsigned", func() error { return credential.VerifyEvent(snapshotEvent(), s.PublicKey()) }, "is not signed"},
		{"flipped signature", func() error {
			m := proto.CloneOf(snap)
			m.Signed.Signature[5] ^= 1
			return credential.VerifyEvent(m, s.PublicKey())
		}, "does not verify"},
		{"flipped payload", func() error {
			m := proto.CloneOf(snap)
			m.Signed.Payload[3] ^= 1
			return credential.VerifyEvent(m, s.PublicKey())
		}, "does not verify"},
		{"untrusted key", func() error {
			m := snapshotEvent()
			m.Signed = byOther
			return credential.VerifyEvent(m, s.PublicKey())
		}, "not trusted"},
		// The plan's snapshot signed as a plan evaluation, presented as an
		// action's: the context differs, even were the bytes to decode.
		{"another type's signature", func() error {
			m := &stewardv1.PolicyEvaluated{Snapshot: plan.Snapshot, Signed: plan.Signed}
			return credential.VerifyEvent(m, s.PublicKey())
		}, "does not verify"},
		{"a decision's signature", func() error {
			d, _ := s.SignDecision(decision())
			m := snapshotEvent()
			m.Signed = &stewardv1.SignedEvent{Payload: d.Decision, Signature: d.Signature, PublicKey: d.PublicKey}
			return credential.VerifyEvent(m, s.PublicKey())
		}, "does not verify"},
	} {
		if err := tc.err(); !errs.Is(err, errs.Corrupt) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want a corrupt error with %q", tc.name, err, tc.want)
		}
	}
}

// TestVerifyFromTheFold: the fold keeps a snapshot's and a request's
// signature beside them (Action.snapshot_signed, Approval.request_signed);
// a request verifies after votes and a decision are added, and not once
// its terms are changed.
func TestVerifyFromTheFold(t *testing.T) {
	s := newSigner(t)
	snap, req := snapshotEvent(), requestEvent()
	snap.Signed, _ = credential.SignEvent(s, snap)
	req.Signed, _ = credential.SignEvent(s, req)
	a := &stewardv1.Action{ActionId: "act-1", Snapshot: snap.Snapshot, SnapshotSigned: snap.Signed}
	if err := credential.VerifySnapshot(a, s.PublicKey()); err != nil {
		t.Fatal(err)
	}
	ap := proto.CloneOf(req.Approval)
	ap.RequestSigned = req.Signed
	ap.Votes = []*stewardv1.ApprovalVote{{Principal: "user:bo", Decision: stewardv1.ApprovalDecision_APPROVAL_DECISION_APPROVE}}
	ap.Decision, ap.DecidedBy, ap.EscalatedTo = stewardv1.ApprovalDecision_APPROVAL_DECISION_APPROVE, "user:bo", "user:cy"
	if err := credential.VerifyApprovalRequest(ap, s.PublicKey()); err != nil {
		t.Fatal(err)
	}
	ap.Target = "acct:own"
	if err := credential.VerifyApprovalRequest(ap, s.PublicKey()); err == nil || !strings.Contains(err.Error(), "approval request ap-1") {
		t.Errorf("an approval showing another target verified: %v", err)
	}
	a.Snapshot = proto.CloneOf(a.Snapshot)
	a.Snapshot.RequiredApprovals = 0
	if err := credential.VerifySnapshot(a, s.PublicKey()); err == nil {
		t.Error("a snapshot asking fewer approvers verified")
	}
}

func BenchmarkSignEvent(b *testing.B) {
	s := credential.NewSigner(ed25519.NewKeyFromSeed(make([]byte, ed25519.SeedSize)))
	for b.Loop() {
		if _, err := credential.SignEvent(s, requestEvent()); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkVerifyEvent(b *testing.B) {
	s := credential.NewSigner(ed25519.NewKeyFromSeed(make([]byte, ed25519.SeedSize)))
	req := requestEvent()
	req.Signed, _ = credential.SignEvent(s, req)
	for b.Loop() {
		if err := credential.VerifyEvent(req, s.PublicKey()); err != nil {
			b.Fatal(err)
		}
	}
}
