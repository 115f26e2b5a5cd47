package keyfile_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/steward-run/steward/pkg/keyfile"
)

func TestCreate(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "sub", "secret.key")
	created, err := keyfile.Create(path, []byte("first\n"))
	if err != nil || !created {
		t.Fatalf("Create = %v, %v; want created", created, err)
	}
	created, err = keyfile.Create(path, []byte("second\n"))
	if err != nil || created {
		t.Fatalf("Create over an existing file = %v, %v; want kept", created, err)
	}
	b, err := os.ReadFile(path)
	if err != nil || string(b) != "first\n" {
		t.Fatalf("file = %q, %v; want the first data", b, err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("mode = %v, %v; want 0600", fi.Mode().Perm(), err)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, "sub", ".*")); len(left) != 0 {
		t.Errorf("temporary files left behind: %v", left)
	}
}

func TestCreateRace(t *testing.T) {
	// Many creators at once: exactly one wins, and the file holds its
	// data, whole.
	path := filepath.Join(t.TempDir(), "secret.key")
	const n = 16
	var wg sync.WaitGroup
	created := make([]bool, n)
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			created[i], errs[i] = keyfile.Create(path, bytes.Repeat([]byte(fmt.Sprintf("%02d", i)), 1<<12))
		})
	}
	wg.Wait()
	winner := -1
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("creator %d: %v", i, errs[i])
		}
		if created[i] {
			if winner >= 0 {
				t.Fatalf("creators %d and %d both report creating the file", winner, i)
			}
			winner = i
		}
	}
	if winner < 0 {
		t.Fatal("no creator reports creating the file")
	}
	b, err := os.ReadFile(path)
	if err != nil || !bytes.Equal(b, bytes.Repeat([]byte(fmt.Sprintf("%02d", winner)), 1<<12)) {
		t.Fatalf("the file does not hold the winner's data whole (%d bytes, %v)", len(b), err)
	}
}
