package credential_test

import (
	"crypto/ed25519"
	"crypto/rand"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/steward-run/steward/pkg/credential"
	"github.com/steward-run/steward/pkg/errs"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

func permit() *stewardv1.ActionPermit {
	return &stewardv1.ActionPermit{
		PermitId: "permit-1", ActionId: "act-1", ActionHash: "hash-1", RequestHash: "req-1",
		SnapshotId: "snap-1", CredentialRef: "cred-1", IssuedAt: timestamppb.New(now), ExpiresAt: timestamppb.New(now.Add(600e9)),
	}
}

func TestSignAndVerifyPermit(t *testing.T) {
	s := newSigner(t)
	sp, err := s.SignPermit(permit())
	if err != nil {
		t.Fatal(err)
	}
	for name, verify := range verifiers(s, newSigner(t)) {
		got, err := verify(permit(), sp, "act-1", "hash-1", s.PublicKey())
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !proto.Equal(got, permit()) {
			t.Errorf("%s verified %v", name, got)
		}
	}
}

// verifiers are the ways a permit is verified: in full; with the memory of
// the signer that signed it, which skips Ed25519 (credential.Recent); and
// with another signer's, which must not.
func verifiers(signedBy, other *credential.Signer) map[string]func(*stewardv1.ActionPermit, *stewardv1.SignedPermit, string, string, ...ed25519.PublicKey) (*stewardv1.ActionPermit, error) {
	return map[string]func(*stewardv1.ActionPermit, *stewardv1.SignedPermit, string, string, ...ed25519.PublicKey) (*stewardv1.ActionPermit, error){
		"in full":               credential.VerifyPermit,
		"signed here":           signedBy.Recent().VerifyPermit,
		"signed somewhere else": other.Recent().VerifyPermit,
	}
}

func TestVerifyPermitRefuses(t *testing.T) {
	s, other := newSigner(t), newSigner(t)
	sp, err := s.SignPermit(permit())
	if err != nil {
		t.Fatal(err)
	}
	badSig := proto.CloneOf(sp)
	badSig.Signature[0] ^= 1
	tampered := proto.CloneOf(sp)
	tampered.Permit[len(tampered.Permit)-1] ^= 1
	byOther, _ := other.SignPermit(permit())
	// The same permit copied onto another action: the recorded permit is
	// rewritten to name it, the signed bytes still name the first.
	moved := permit()
	moved.ActionId, moved.ActionHash = "act-2", "hash-2"
	// A credential's signature is no permit's, even over the same bytes.
	credSigned, _ := s.Sign(&stewardv1.TaskCredential{CredentialId: "permit-1", TaskId: "act-1", Principal: "hash-1"})
	asPermit := &stewardv1.SignedPermit{Permit: credSigned.Credential, Signature: credSigned.Signature, PublicKey: credSigned.PublicKey}
	credPermit := &stewardv1.ActionPermit{PermitId: "permit-1", ActionId: "act-1", ActionHash: "hash-1"}
	for _, tc := range []struct {
		name           string
		recorded       *stewardv1.ActionPermit
		sp             *stewardv1.SignedPermit
		actionID, hash string
		want           string
	}{
		{"unsigned", permit(), nil, "act-1", "hash-1", "is not signed"},
		{"bad signature", permit(), badSig, "act-1", "hash-1", "does not verify"},
		{"tampered bytes", permit(), tampered, "act-1", "hash-1", "does not verify"},
		{"untrusted key", permit(), byOther, "act-1", "hash-1", "not trusted"},
		{"replayed onto another action", moved, sp, "act-2", "hash-2", "was signed for action act-1"},
		{"another hash for the action", permit(), sp, "act-1", "hash-other", "was signed for action act-1"},
		{"recorded permit differs", func() *stewardv1.ActionPermit { p := permit(); p.ExpiresAt = timestamppb.New(now.Add(1e15)); return p }(), sp, "act-1", "hash-1", "is not the permit that was signed"},
		{"a credential's signature", credPermit, asPermit, "act-1", "hash-1", "does not verify"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for name, verify := range verifiers(s, other) {
				_, err := verify(tc.recorded, tc.sp, tc.actionID, tc.hash, s.PublicKey())
				if !errs.Is(err, errs.Corrupt) || !strings.Contains(err.Error(), tc.want) {
					t.Errorf("%s: got %v, want a corrupt error with %q", name, err, tc.want)
				}
			}
		})
	}
}

func decision() *stewardv1.ApprovalDecided {
	return &stewardv1.ApprovalDecided{
		ApprovalId: "ap-1", ActionId: "act-1", ActionHash: "hash-1",
		Decision: stewardv1.ApprovalDecision_APPROVAL_DECISION_APPROVE, DecidedBy: "user:bo", Comment: "fine",
	}
}

func TestSignAndVerifyDecision(t *testing.T) {
	s := newSigner(t)
	d := decision()
	signed, err := s.SignDecision(d)
	if err != nil {
		t.Fatal(err)
	}
	d.Signed = signed
	if err := credential.VerifyDecision(d, s.PublicKey()); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		change func(*stewardv1.ApprovalDecided)
		want   string
	}{
		{"another principal", func(d *stewardv1.ApprovalDecided) { d.DecidedBy = "user:mallory" }, "is not the decision that was signed"},
		{"another hash", func(d *stewardv1.ApprovalDecided) { d.ActionHash = "hash-2" }, "is not the decision that was signed"},
		{"another decision", func(d *stewardv1.ApprovalDecided) { d.Decision = stewardv1.ApprovalDecision_APPROVAL_DECISION_REJECT }, "is not the decision that was signed"},
		{"unsigned", func(d *stewardv1.ApprovalDecided) { d.Signed = nil }, "is not signed"},
		{"bad signature", func(d *stewardv1.ApprovalDecided) { d.Signed.Signature[3] ^= 1 }, "does not verify"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := proto.CloneOf(d)
			tc.change(d)
			err := credential.VerifyDecision(d, s.PublicKey())
			if !errs.Is(err, errs.Corrupt) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want a corrupt error with %q", err, tc.want)
			}
		})
	}
	if err := credential.VerifyDecision(d, newSigner(t).PublicKey()); err == nil || !strings.Contains(err.Error(), "not trusted") {
		t.Errorf("untrusted key: %v", err)
	}
}

func BenchmarkSignPermit(b *testing.B) {
	_, key, _ := ed25519.GenerateKey(rand.Reader)
	s := credential.NewSigner(key)
	for b.Loop() {
		if _, err := s.SignPermit(permit()); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkVerifyPermit(b *testing.B) {
	_, key, _ := ed25519.GenerateKey(rand.Reader)
	s := credential.NewSigner(key)
	sp, _ := s.SignPermit(permit())
	p := permit()
	for b.Loop() {
		if _, err := credential.VerifyPermit(p, sp, "act-1", "hash-1", s.PublicKey()); err != nil {
			b.Fatal(err)
		}
	}
}

// TestVerifyVote: a vote the fold recorded holds only with its own signed
// decision, on its own approval.
func TestVerifyVote(t *testing.T) {
	s, other := newSigner(t), newSigner(t)
	d := decision()
	signed, err := s.SignDecision(d)
	if err != nil {
		t.Fatal(err)
	}
	ap := &stewardv1.Approval{ApprovalId: "ap-1", ActionId: "act-1", ActionHash: "hash-1"}
	vote := func() *stewardv1.ApprovalVote {
		return &stewardv1.ApprovalVote{Principal: d.DecidedBy, Decision: d.Decision, Comment: d.Comment, Signed: proto.CloneOf(signed)}
	}
	if err := credential.VerifyVote(ap, vote(), s.PublicKey()); err != nil {
		t.Fatal(err)
	}
	byOther, _ := other.SignDecision(d)
	for _, tc := range []struct {
		name   string
		ap     *stewardv1.Approval
		change func(*stewardv1.ApprovalVote)
		want   string
	}{
		{"unsigned", ap, func(v *stewardv1.ApprovalVote) { v.Signed = nil }, "is not signed"},
		{"another principal", ap, func(v *stewardv1.ApprovalVote) { v.Principal = "user:mallory" }, "is not the vote that was signed"},
		{"another decision", ap, func(v *stewardv1.ApprovalVote) { v.Decision = stewardv1.ApprovalDecision_APPROVAL_DECISION_REJECT }, "is not the vote that was signed"},
		{"another comment", ap, func(v *stewardv1.ApprovalVote) { v.Comment = "" }, "is not the vote that was signed"},
		{"cast as the backup", ap, func(v *stewardv1.ApprovalVote) { v.AsBackup = true }, "is not the vote that was signed"},
		{"another approval", &stewardv1.Approval{ApprovalId: "ap-2", ActionId: "act-1", ActionHash: "hash-1"}, func(*stewardv1.ApprovalVote) {}, "is not the vote that was signed"},
		{"another hash", &stewardv1.Approval{ApprovalId: "ap-1", ActionId: "act-1", ActionHash: "hash-2"}, func(*stewardv1.ApprovalVote) {}, "is not the vote that was signed"},
		{"bad signature", ap, func(v *stewardv1.ApprovalVote) { v.Signed.Signature[0] ^= 1 }, "does not verify"},
		{"untrusted key", ap, func(v *stewardv1.ApprovalVote) { v.Signed = byOther }, "not trusted"},
	} {
		v := vote()
		tc.change(v)
		if err := credential.VerifyVote(tc.ap, v, s.PublicKey()); !errs.Is(err, errs.Corrupt) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want a corrupt error with %q", tc.name, err, tc.want)
		}
	}
}
