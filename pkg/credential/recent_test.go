package credential_test

import (
	"fmt"
	"testing"

	"github.com/steward-run/steward/pkg/credential"
)

// TestRecentRemembersWhatItsSignerSignedLately: a permit is remembered
// with its exact bytes, signature and key, and only the last
// RecentSignatures of them, so the memory stays bounded however long the
// process runs.
func TestRecentRemembersWhatItsSignerSignedLately(t *testing.T) {
	s, other := newSigner(t), newSigner(t)
	r := s.Recent()
	first, err := s.SignPermit(permit())
	if err != nil {
		t.Fatal(err)
	}
	changed := append([]byte(nil), first.Permit...)
	changed[len(changed)-1] ^= 1
	for _, tc := range []struct {
		name      string
		data, sig []byte
		signer    *credential.Signer
		want      bool
	}{
		{"as signed", first.Permit, first.Signature, s, true},
		{"other bytes", changed, first.Signature, s, false},
		{"another key", first.Permit, first.Signature, other, false},
		{"a truncated signature", first.Permit, first.Signature[:10], s, false},
	} {
		if got := r.SignedPermit(tc.data, tc.sig, tc.signer.PublicKey()); got != tc.want {
			t.Errorf("%s: remembered %v, want %v", tc.name, got, tc.want)
		}
	}
	if other.Recent().SignedPermit(first.Permit, first.Signature, s.PublicKey()) {
		t.Error("another signer's memory has the permit")
	}

	var last []byte
	var lastSig []byte
	for i := range credential.RecentSignatures {
		p := permit()
		p.PermitId = fmt.Sprintf("permit-%d", i+2)
		sp, err := s.SignPermit(p)
		if err != nil {
			t.Fatal(err)
		}
		last, lastSig = sp.Permit, sp.Signature
	}
	if r.SignedPermit(first.Permit, first.Signature, s.PublicKey()) {
		t.Error("the oldest permit is still remembered")
	}
	if !r.SignedPermit(last, lastSig, s.PublicKey()) {
		t.Error("the newest permit is forgotten")
	}
	if r.Len() != credential.RecentSignatures {
		t.Errorf("remembers %d signatures, want %d", r.Len(), credential.RecentSignatures)
	}
	var nilRecent *credential.Recent
	if _, err := nilRecent.VerifyPermit(permit(), first, "act-1", "hash-1", s.PublicKey()); err != nil {
		t.Errorf("a nil Recent verifies in full: %v", err)
	}
}
