package embedded_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/steward-run/steward/pkg/embedded"
	"github.com/steward-run/steward/pkg/natsperm"
)

// TestUsersAreKeptAcrossStarts: the seeds are written once, private, and
// read back by the next start, so that a process outside dev keeps
// signing in as its plane; a seed that is not one is named.
func TestUsersAreKeptAcrossStarts(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "nats")
	if _, err := embedded.LoadOrCreateUsers(dir); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(dir); err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("%s: %v, %v", dir, fi.Mode(), err)
	}
	seeds := map[string]string{}
	for _, user := range append(natsperm.Planes(), embedded.AdminUser) {
		f := embedded.SeedFile(dir, user)
		fi, err := os.Stat(f)
		if err != nil || fi.Mode().Perm() != 0o600 {
			t.Fatalf("%s: %v, %v", f, fi.Mode(), err)
		}
		b, _ := os.ReadFile(f)
		if !strings.HasPrefix(string(b), "SU") {
			t.Errorf("%s does not hold a user seed", f)
		}
		seeds[user] = string(b)
	}
	users, err := embedded.LoadOrCreateUsers(dir)
	if err != nil {
		t.Fatal(err)
	}
	for user, seed := range seeds {
		if b, _ := os.ReadFile(embedded.SeedFile(dir, user)); string(b) != seed {
			t.Errorf("%s's seed changed on the second start", user)
		}
	}
	// The server takes a plane signing in with the file, as serve does.
	s, err := embedded.Start(embedded.Config{StoreDir: t.TempDir(), Users: users})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Shutdown()
	o, err := nats.NkeyOptionFromSeed(embedded.SeedFile(dir, "execution"))
	if err != nil {
		t.Fatal(err)
	}
	nc, err := s.Connect(o, nats.CustomInboxPrefix(natsperm.Inbox("execution")))
	if err != nil {
		t.Fatal(err)
	}
	nc.Close()

	if err := os.WriteFile(embedded.SeedFile(dir, "state"), []byte("not a seed\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := embedded.LoadOrCreateUsers(dir); err == nil || !strings.Contains(err.Error(), "state.nk") {
		t.Errorf("a bad seed: %v, want an error naming state.nk", err)
	}
}
