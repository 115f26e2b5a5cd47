package embedded

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"

	"github.com/steward-run/steward/pkg/keyfile"
	"github.com/steward-run/steward/pkg/natsperm"
)

// AdminUser is the name of the user with every permission: the process's
// own setup and reading connection, and operators' tools (the nats CLI).
const AdminUser = "admin"

// UsersDir is where a dev server keeps its NATS users' seeds, under its
// data directory.
const UsersDir = "nats"

// SeedFile returns the file that holds user's nkey seed in dir: one of
// natsperm.Users() or AdminUser. A `steward serve --nats-nkey` process
// pointed at a dev server's NATS uses its plane's.
func SeedFile(dir, user string) string { return filepath.Join(dir, user+".nk") }

// Users are the NATS users of an embedded server: one nkey user per plane
// with the permissions of pkg/natsperm, and an admin with all of them.
// Nobody else may connect. A *Users is safe for concurrent use.
type Users struct {
	keys map[string]nkeys.KeyPair // by plane or AdminUser
}

// LoadOrCreateUsers reads the users' seeds from dir, creating dir (0700)
// and any seed that is missing (0600), so that the users outlive a
// restart and processes outside this one can connect as a plane.
func LoadOrCreateUsers(dir string) (*Users, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("nats users: %w", err)
	}
	u := &Users{keys: map[string]nkeys.KeyPair{}}
	for _, name := range append(natsperm.Users(), AdminUser) {
		kp, err := loadOrCreateSeed(SeedFile(dir, name))
		if err != nil {
			return nil, fmt.Errorf("nats user %s: %w", name, err)
		}
		u.keys[name] = kp
	}
	return u, nil
}

func loadOrCreateSeed(path string) (nkeys.KeyPair, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		kp, err := nkeys.CreateUser()
		if err != nil {
			return nil, err
		}
		seed, err := kp.Seed()
		if err != nil {
			return nil, err
		}
		// A concurrent start keeps the first seed, and reads it whole.
		created, err := keyfile.Create(path, append(seed, '\n'))
		if err != nil {
			return nil, err
		}
		if !created {
			return loadOrCreateSeed(path)
		}
		return kp, nil
	}
	if err != nil {
		return nil, err
	}
	kp, err := nkeys.ParseDecoratedNKey(bytes.TrimSpace(b))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if pub, err := kp.PublicKey(); err != nil || !nkeys.IsValidPublicUserKey(pub) {
		return nil, fmt.Errorf("%s: not an nkey user seed", path)
	}
	return kp, nil
}

// nkeyUsers returns the server's side: each public key with its
// permissions (none for the admin: everything).
func (u *Users) nkeyUsers() []*server.NkeyUser {
	var out []*server.NkeyUser
	for _, name := range append(natsperm.Users(), AdminUser) {
		pub, _ := u.keys[name].PublicKey()
		out = append(out, &server.NkeyUser{Nkey: pub, Permissions: natsperm.For(name)})
	}
	return out
}

// Options returns the connection options that sign in as user (a plane or
// AdminUser): its nkey, and for a plane its own inbox, the only replies
// its permissions let it read.
func (u *Users) Options(user string) ([]nats.Option, error) {
	kp, ok := u.keys[user]
	if !ok {
		return nil, fmt.Errorf("nats: no user %q", user)
	}
	pub, err := kp.PublicKey()
	if err != nil {
		return nil, err
	}
	opts := []nats.Option{nats.Nkey(pub, kp.Sign)}
	if user != AdminUser {
		opts = append(opts, nats.CustomInboxPrefix(natsperm.Inbox(user)))
	}
	return opts, nil
}
