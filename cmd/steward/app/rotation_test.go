package app

import (
	"bytes"
	"crypto/ed25519"
	"encoding/hex"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestRotationFlags: --secret-key-earlier and --call-key-published repeat;
// in serve each needs the current key it stands beside, and is refused
// without it, naming both flags; the published call keys follow the
// signing one in the JWKS's order.
func TestRotationFlags(t *testing.T) {
	serve := []string{"--nats", "nats://n:4222", "--plane", "execution", "--insecure"}
	for _, tc := range []struct{ args, want []string }{
		{[]string{"--secret-key-earlier", "a.key"}, []string{"--secret-key-earlier", "--secret-key"}},
		{[]string{"--call-key-published", "a.pub"}, []string{"--call-key-published", "--call-key"}},
	} {
		m := NewServer(&bytes.Buffer{}, &bytes.Buffer{})
		err := m.ParseFlags("serve", append(slices.Clone(serve), tc.args...))
		if err == nil || !strings.Contains(err.Error(), tc.want[0]) || !strings.Contains(err.Error(), "needs "+tc.want[1]+":") {
			t.Errorf("%v: %v; want a refusal naming %v", tc.args, err, tc.want)
		}
	}
	m := NewServer(&bytes.Buffer{}, &bytes.Buffer{})
	if err := m.ParseFlags("serve", append(slices.Clone(serve), "--secret-key", "s.key", "--secret-key-earlier", "a.key", "--secret-key-earlier", "b.key",
		"--call-key", "c.key", "--call-key-published", "p1.pub", "--call-key-published", "p2.pub")); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(m.Rotation.SecretEarlier, []string{"a.key", "b.key"}) || !slices.Equal(m.Rotation.CallPublished, []string{"p1.pub", "p2.pub"}) {
		t.Errorf("rotation flags: %+v", m.Rotation)
	}

	dir := t.TempDir()
	var pubs []ed25519.PublicKey
	var files []string
	for _, name := range []string{"p1.pub", "p2.pub"} {
		pub, _, _ := ed25519.GenerateKey(nil)
		pubs = append(pubs, pub)
		files = append(files, filepath.Join(dir, name))
		if err := os.WriteFile(files[len(files)-1], []byte(hex.EncodeToString(pub)), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	signing, _, _ := ed25519.GenerateKey(nil)
	keys, err := rotationFlags{CallPublished: files}.callKeySet(signing)
	if err != nil || len(keys) != 3 || !keys[0].Equal(signing) || !keys[1].Equal(pubs[0]) || !keys[2].Equal(pubs[1]) {
		t.Errorf("callKeySet = %d keys, %v; want the signing key, then the published in order", len(keys), err)
	}
	if _, err := (rotationFlags{CallPublished: []string{filepath.Join(dir, "missing.pub")}}).callKeySet(signing); err == nil || !strings.Contains(err.Error(), "--call-key-published") {
		t.Errorf("a missing published key: %v", err)
	}
}

// TestCallKeyPublishedTwice: a published key that is the signing key, or
// one given twice, is refused naming the flag: a JWKS with one kid twice
// is one some JOSE libraries refuse whole, and it is the mistake of a
// rotation's step 3 (publishing the new key instead of the old).
func TestCallKeyPublishedTwice(t *testing.T) {
	dir := t.TempDir()
	signing, _, _ := ed25519.GenerateKey(nil)
	other, _, _ := ed25519.GenerateKey(nil)
	write := func(name string, pub ed25519.PublicKey) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(hex.EncodeToString(pub)), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	same, o := write("same.pub", signing), write("other.pub", other)
	for _, files := range [][]string{{same}, {o, o}} {
		_, err := (rotationFlags{CallPublished: files}).callKeySet(signing)
		if err == nil || !strings.Contains(err.Error(), "--call-key-published") || !strings.Contains(err.Error(), "published already") {
			t.Errorf("%v: %v; want a refusal naming --call-key-published", files, err)
		}
	}
}
