package secret_test

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/steward-run/steward/pkg/secret"
)

func TestSealOpen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "dir", "secret.key")
	key, created, err := secret.LoadOrCreateKey(path)
	if err != nil || !created {
		t.Fatalf("LoadOrCreateKey = %v, %v", created, err)
	}
	again, created, err := secret.LoadOrCreateKey(path)
	if err != nil || created || !bytes.Equal(key, again) {
		t.Fatalf("a second LoadOrCreateKey = %x, %v, %v; want the same key", again, created, err)
	}
	s, err := secret.New(key)
	if err != nil {
		t.Fatal(err)
	}
	c := s.Commit("t1", []byte(`"hunter2"`))
	if c != s.Commit("t1", []byte(`"hunter2"`)) {
		t.Error("Commit is not deterministic")
	}
	if c == s.Commit("t2", []byte(`"hunter2"`)) || c == s.Commit("t1", []byte(`"hunter3"`)) {
		t.Error("Commit does not bind the task and the value")
	}
	sealed := s.Seal("t1", c, []byte(`"hunter2"`))
	if bytes.Contains(sealed, []byte("hunter2")) {
		t.Error("the sealed value holds the clear one")
	}
	if v, err := s.Open("t1", c, sealed); err != nil || string(v) != `"hunter2"` {
		t.Errorf("Open = %s, %v", v, err)
	}
	other := s.Commit("t1", []byte(`"other"`))
	for name, open := range map[string]func() ([]byte, error){
		"another task":       func() ([]byte, error) { return s.Open("t2", c, sealed) },
		"another commitment": func() ([]byte, error) { return s.Open("t1", other, sealed) },
		"sealed for another commitment": func() ([]byte, error) {
			return s.Open("t1", other, s.Seal("t1", other, []byte(`"hunter2"`)))
		},
		"truncated": func() ([]byte, error) { return s.Open("t1", c, sealed[:10]) },
	} {
		if _, err := open(); !errors.Is(err, secret.ErrMismatch) {
			t.Errorf("%s: Open = %v, want ErrMismatch", name, err)
		}
	}
	k2 := bytes.Clone(key)
	k2[0] ^= 1
	s2, _ := secret.New(k2)
	if s2.Commit("t1", []byte(`"hunter2"`)) == c {
		t.Error("another key makes the same commitment")
	}
}

func TestLoadOrCreateKeyRace(t *testing.T) {
	// Two processes starting at once on one key file (two planes of a
	// dev data directory, or two containers on one volume) must end with
	// one key: each would otherwise seal what the other cannot open.
	path := filepath.Join(t.TempDir(), "secret.key")
	const n = 8
	keys := make([][]byte, n)
	created := make([]bool, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { keys[i], created[i], errs[i] = secret.LoadOrCreateKey(path) })
	}
	wg.Wait()
	var creators int
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("creator %d: %v", i, errs[i])
		}
		if !bytes.Equal(keys[i], keys[0]) {
			t.Fatalf("creators 0 and %d hold different keys", i)
		}
		if created[i] {
			creators++
		}
	}
	if creators != 1 {
		t.Errorf("%d creators report creating the key, want 1", creators)
	}
	if key, err := secret.LoadKey(path); err != nil || !bytes.Equal(key, keys[0]) {
		t.Errorf("LoadKey = %x, %v; want the shared key", key, err)
	}
}

func TestLoadKey(t *testing.T) {
	dir := t.TempDir()
	if _, err := secret.LoadKey(filepath.Join(dir, "missing.key")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a missing file: %v, want fs.ErrNotExist", err)
	}
	bad := filepath.Join(dir, "bad.key")
	if err := os.WriteFile(bad, []byte("abcd\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := secret.LoadKey(bad); err == nil || !strings.Contains(err.Error(), "64 hex digits") {
		t.Errorf("a short key: %v, want the 64 hex digits asked for", err)
	}
}

// TestRedactACutValue: a message cut short ("…", as the HTTP adapter
// clips a tool's reason to 512 bytes) in the middle of a secret value
// keeps none of it: the cut end that begins a value is redacted too.
func TestRedactACutValue(t *testing.T) {
	forms := secret.Forms([]byte(`"hunter2-correct-horse"`))
	for msg, want := range map[string]string{
		"HTTP 400 Bad Request: wrong password hunter2-corr…":                    "HTTP 400 Bad Request: wrong password [secret]…",
		"HTTP 400 Bad Request: wrong password hunter2-correct-horse, try again": "HTTP 400 Bad Request: wrong password [secret], try again",
		"HTTP 400 Bad Request: nothing secret…":                                 "HTTP 400 Bad Request: nothing secret…",
	} {
		if got := secret.Redact(msg, forms); got != want {
			t.Errorf("Redact(%q) = %q, want %q", msg, got, want)
		}
	}
}

// TestDigest: the digest shown to a caller who may not read content is
// keyed (another key, another digest), bound to the task, stable, unlike
// the commitment to the same bytes, and hidden without a key.
func TestDigest(t *testing.T) {
	one, err := secret.New(bytes.Repeat([]byte{1}, secret.KeySize))
	if err != nil {
		t.Fatal(err)
	}
	two, err := secret.New(bytes.Repeat([]byte{2}, secret.KeySize))
	if err != nil {
		t.Fatal(err)
	}
	h := "4a2f3c0e"
	d := one.Digest("t1", h)
	if !strings.HasPrefix(d, secret.Prefix) || len(d) != len(secret.Prefix)+64 || d != one.Digest("t1", h) {
		t.Fatalf("Digest = %q, want a stable %s and 64 hex digits", d, secret.Prefix)
	}
	for what, other := range map[string]string{"another key": two.Digest("t1", h), "another task": one.Digest("t2", h), "the commitment": one.Commit("t1", []byte(h))} {
		if other == d {
			t.Errorf("%s gives the same digest %s", what, d)
		}
	}
	var none *secret.Sealer
	if got := none.Digest("t1", h); got != "" {
		t.Errorf("Digest without a key = %q, want it hidden", got)
	}
	if got := one.Digest("t1", ""); got != "" {
		t.Errorf("Digest of no hash = %q, want none", got)
	}
}

// TestRotation: a Sealer with a new key and the old one in its ring opens
// what the old key sealed, and checks it against the old key's commitment;
// it commits and seals anew under the new key only; without the old key in
// the ring, the old values do not open.
func TestRotation(t *testing.T) {
	oldKey, newKey := bytes.Repeat([]byte{1}, secret.KeySize), bytes.Repeat([]byte{2}, secret.KeySize)
	before, _ := secret.New(oldKey)
	value := []byte(`"hunter2"`)
	c := before.Commit("t1", value)
	sealed := before.Seal("t1", c, value)

	ring, err := secret.New(newKey, oldKey)
	if err != nil {
		t.Fatal(err)
	}
	if v, err := ring.Open("t1", c, sealed); err != nil || string(v) != `"hunter2"` {
		t.Errorf("the ring opens the old key's value as %s, %v", v, err)
	}
	if got := ring.Commitments("t1", value); len(got) != 2 || got[1] != c || got[0] == c || got[0] != ring.Commit("t1", value) {
		t.Errorf("Commitments = %v; want the new key's, then the old key's %s", got, c)
	}
	fresh := ring.Commit("t1", value)
	if _, err := before.Open("t1", fresh, ring.Seal("t1", fresh, value)); !errors.Is(err, secret.ErrMismatch) {
		t.Errorf("the old key alone opens a value sealed after the rotation: %v", err)
	}
	after, _ := secret.New(newKey)
	if _, err := after.Open("t1", c, sealed); !errors.Is(err, secret.ErrMismatch) {
		t.Errorf("without the old key in the ring, its value opens: %v", err)
	}
	// The value opened by the old key must commit under the old key: a
	// value sealed under the old key for a new-key commitment is refused.
	if _, err := ring.Open("t1", fresh, before.Seal("t1", fresh, value)); !errors.Is(err, secret.ErrMismatch) {
		t.Errorf("a value sealed under one key for another key's commitment opens: %v", err)
	}
	if ids := ring.KeyIDs(); len(ids) != 2 || ids[1] != before.KeyIDs()[0] || ids[0] == ids[1] || len(ids[0]) != 16 {
		t.Errorf("KeyIDs = %v", ids)
	}
	if _, err := secret.New(newKey, newKey); err == nil {
		t.Error("a ring with one key twice is accepted")
	}
}

// BenchmarkOpen measures opening a value sealed under the current key and
// under the last of two earlier keys: each key tried before the right one
// costs a failed tag check.
func BenchmarkOpen(b *testing.B) {
	keys := [][]byte{bytes.Repeat([]byte{1}, secret.KeySize), bytes.Repeat([]byte{2}, secret.KeySize), bytes.Repeat([]byte{3}, secret.KeySize)}
	ring, err := secret.New(keys[0], keys[1:]...)
	if err != nil {
		b.Fatal(err)
	}
	oldest, _ := secret.New(keys[2])
	value := []byte(`"correct horse battery staple"`)
	for name, s := range map[string]*secret.Sealer{"current": ring, "third-in-ring": oldest} {
		c := s.Commit("t1", value)
		sealed := s.Seal("t1", c, value)
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				if _, err := ring.Open("t1", c, sealed); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestOpenUnderAnUnknownKey: a value sealed under a key the ring does not
// hold — an earlier key left out, or dropped too soon — is refused with an
// error that says so and names the ring's key ids, never a panic, and is
// still ErrMismatch to callers; a value that opens but commits to another
// value says mismatch, not key. Cut or empty sealed bytes are refused too.
// A key id shows nothing of its key.
func TestOpenUnderAnUnknownKey(t *testing.T) {
	oldKey, newKey := bytes.Repeat([]byte{7}, secret.KeySize), bytes.Repeat([]byte{8}, secret.KeySize)
	before, _ := secret.New(oldKey)
	ring, _ := secret.New(newKey)
	value := []byte(`"pw"`)
	c := before.Commit("t1", value)
	_, err := ring.Open("t1", c, before.Seal("t1", c, value))
	if !errors.Is(err, secret.ErrMismatch) || !strings.Contains(err.Error(), "none of the keys") || !strings.Contains(err.Error(), ring.KeyIDs()[0]) {
		t.Errorf("a value sealed under an unknown key: %v; want an error saying no key here opens it, naming the ring's ids", err)
	}
	other := ring.Commit("t1", []byte(`"other"`))
	if _, err := ring.Open("t1", other, ring.Seal("t1", other, value)); !errors.Is(err, secret.ErrMismatch) || strings.Contains(err.Error(), "none of the keys") {
		t.Errorf("a value that opens but commits elsewhere: %v; want a mismatch, not a missing key", err)
	}
	for _, cut := range [][]byte{nil, {1, 2, 3}, before.Seal("t1", c, value)[:30]} {
		if _, err := ring.Open("t1", c, cut); !errors.Is(err, secret.ErrMismatch) {
			t.Errorf("sealed bytes %x: %v", cut, err)
		}
	}
	for _, k := range [][]byte{oldKey, newKey} {
		s, _ := secret.New(k)
		if id := s.KeyIDs()[0]; strings.Contains(fmt.Sprintf("%x", k), id) || strings.Contains(string(k), id) {
			t.Errorf("key id %s shows its key", id)
		}
	}
}
