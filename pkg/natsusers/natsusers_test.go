package natsusers_test

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/steward-run/steward/pkg/natsusers"
)

// samplePerms covers every shape Render must carry through the server's
// config parser: allow and deny lists, an empty allow list, no list at
// all, and response permissions.
func samplePerms(plane string) *server.Permissions {
	switch plane {
	case "a":
		return &server.Permissions{
			Publish:   &server.SubjectPermission{Allow: []string{"steward.task.*.x.made", "$JS.API.STREAM.INFO.S"}, Deny: []string{"$JS.API.STREAM.PURGE.>"}},
			Subscribe: &server.SubjectPermission{Allow: []string{"_INBOX_a.>"}},
			Response:  &server.ResponsePermission{MaxMsgs: 1, Expires: time.Minute},
		}
	case "b":
		return &server.Permissions{Publish: &server.SubjectPermission{Allow: []string{}}}
	}
	return nil
}

func TestWriteRendersWhatTheServerReads(t *testing.T) {
	dir := t.TempDir()
	users, err := natsusers.Write(dir, []string{"a", "b", "c"}, samplePerms)
	if err != nil {
		t.Fatal(err)
	}
	opts, err := server.ProcessConfigFile(filepath.Join(dir, natsusers.ConfigDir, natsusers.ConfigFile))
	if err != nil {
		t.Fatalf("the server does not read the rendered config: %v", err)
	}
	if len(opts.Nkeys) != len(users) {
		t.Fatalf("server read %d nkey users, want %d", len(opts.Nkeys), len(users))
	}
	for i, u := range users {
		got := opts.Nkeys[i]
		if got.Nkey != u.NKey {
			t.Errorf("user %d: nkey %s, want %s", i, got.Nkey, u.NKey)
		}
		want := u.Permissions
		if u.Plane == "b" {
			// An empty allow list is written as a deny of everything.
			want = &server.Permissions{Publish: &server.SubjectPermission{Deny: []string{">"}}}
		}
		if !reflect.DeepEqual(got.Permissions, want) {
			t.Errorf("%s: server read permissions %+v, want %+v", u.Plane, got.Permissions, want)
		}
	}
}

func TestWriteKeepsSeeds(t *testing.T) {
	dir := t.TempDir()
	first, err := natsusers.Write(dir, []string{"a", "b"}, samplePerms)
	if err != nil {
		t.Fatal(err)
	}
	again, err := natsusers.Write(dir, []string{"a", "b"}, samplePerms)
	if err != nil {
		t.Fatal(err)
	}
	for i := range first {
		if first[i].NKey != again[i].NKey {
			t.Errorf("%s: a second run made a new key %s (had %s)", first[i].Plane, again[i].NKey, first[i].NKey)
		}
		path := filepath.Join(dir, first[i].Plane, natsusers.SeedFile)
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o600 {
			t.Errorf("%s has mode %o, want 0600", path, fi.Mode().Perm())
		}
	}
	if first[0].NKey == first[1].NKey {
		t.Error("two planes share one key")
	}
	bad := filepath.Join(dir, "a", natsusers.SeedFile)
	if err := os.WriteFile(bad, []byte("not a seed\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := natsusers.Write(dir, []string{"a"}, samplePerms); err == nil {
		t.Errorf("Write kept %s, which holds no seed", bad)
	}
}
