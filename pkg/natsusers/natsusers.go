// Package natsusers writes the NATS users of a services deployment: an nkey
// seed per plane, and the nats-server authorization block that gives each
// plane's user its permissions. The server is given only public keys, and
// each plane only its own seed, so that no plane can speak as another.
//
// Seeds are kept across runs: running Write again after an upgrade renders
// the permissions anew for the same users, and running it at every start
// (a compose init job) changes nothing a running plane holds.
package natsusers

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nkeys"

	"github.com/steward-run/steward/pkg/keyfile"
)

// The layout Write makes under its directory: DIR/nats/users.conf for the
// NATS server, DIR/<plane>/nats.nk for each plane. A directory per reader
// lets a deployment mount each one alone.
const (
	ConfigDir  = "nats"
	ConfigFile = "users.conf"
	SeedFile   = "nats.nk"
)

// User is one plane's NATS user.
type User struct {
	Plane       string
	NKey        string // public key, U…
	Permissions *server.Permissions
}

// Write makes a seed for each plane that has none under dir, keeps those
// that exist, and writes the authorization block for all of them to
// dir/nats/users.conf. perms gives a plane's permissions.
func Write(dir string, planes []string, perms func(plane string) *server.Permissions) ([]User, error) {
	users := make([]User, 0, len(planes))
	for _, p := range planes {
		pub, err := seed(filepath.Join(dir, p, SeedFile))
		if err != nil {
			return nil, err
		}
		users = append(users, User{Plane: p, NKey: pub, Permissions: perms(p)})
	}
	confDir := filepath.Join(dir, ConfigDir)
	if err := os.MkdirAll(confDir, 0o755); err != nil {
		return nil, err
	}
	// Public keys and subjects only: readable by whoever runs the server.
	if err := keyfile.Replace(filepath.Join(confDir, ConfigFile), Render(users), 0o644); err != nil {
		return nil, err
	}
	return users, nil
}

// seed returns the public key of the user seed at path, creating the seed
// (0600, in a 0700 directory) when the file does not exist.
func seed(path string) (string, error) {
	b, err := os.ReadFile(path)
	switch {
	case err == nil:
		defer clear(b)
		kp, err := nkeys.ParseDecoratedUserNKey(b)
		if err != nil {
			return "", fmt.Errorf("%s: not an nkey user seed: %w", path, err)
		}
		defer kp.Wipe()
		return kp.PublicKey()
	case !errors.Is(err, fs.ErrNotExist):
		return "", err
	}
	kp, err := nkeys.CreateUser()
	if err != nil {
		return "", err
	}
	defer kp.Wipe()
	s, err := kp.Seed()
	if err != nil {
		return "", err
	}
	defer clear(s)
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return "", err
	}
	if err := keyfile.Replace(path, append(s, '\n'), 0o600); err != nil {
		return "", err
	}
	return kp.PublicKey()
}

// Render returns a nats-server configuration block declaring users, for
// the server's config to include. It must be the server's only
// authorization block: nats-server takes one list of users.
func Render(users []User) []byte {
	var b bytes.Buffer
	b.WriteString(`# Written by 'steward nats-users': one NATS user per Steward plane, allowed
# to publish only the events its plane owns and to read only what it reads.
# Include it from the nats-server config (include "users.conf", a path
# relative to that file); run the command again after upgrading Steward.
authorization {
  users = [
`)
	for _, u := range users {
		fmt.Fprintf(&b, "    # %s plane\n    {\n      nkey: %s\n", u.Plane, strconv.Quote(u.NKey))
		if p := u.Permissions; p != nil {
			b.WriteString("      permissions: {\n")
			subjects(&b, "publish", p.Publish)
			subjects(&b, "subscribe", p.Subscribe)
			if r := p.Response; r != nil {
				fmt.Fprintf(&b, "        allow_responses: {max: %d, expires: %q}\n", r.MaxMsgs, r.Expires.String())
			}
			b.WriteString("      }\n")
		}
		b.WriteString("    }\n")
	}
	b.WriteString("  ]\n}\n")
	return b.Bytes()
}

func subjects(b *bytes.Buffer, name string, p *server.SubjectPermission) {
	if p == nil {
		return
	}
	fmt.Fprintf(b, "        %s: {\n", name)
	deny := p.Deny
	if p.Allow != nil && len(p.Allow) == 0 {
		// An empty allow list allows nothing, but the config parser reads
		// "allow: []" as no list at all, which allows everything.
		deny = append([]string{">"}, deny...)
	}
	list(b, "allow", p.Allow)
	list(b, "deny", deny)
	b.WriteString("        }\n")
}

func list(b *bytes.Buffer, name string, subjects []string) {
	if len(subjects) == 0 {
		return
	}
	// One subject a line, for a person reviewing what each plane may do.
	q := make([]string, len(subjects))
	for i, s := range subjects {
		q[i] = "            " + strconv.Quote(s)
	}
	fmt.Fprintf(b, "          %s: [\n%s\n          ]\n", name, strings.Join(q, ",\n"))
}
