package secret_test

import (
	"bytes"
	"errors"
	"path/filepath"
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
