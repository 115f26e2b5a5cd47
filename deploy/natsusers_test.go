package deploy_test

import (
	"bytes"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/steward-run/steward/cmd/steward/app"
	"github.com/steward-run/steward/pkg/natsusers"
)

var authorization struct {
	once sync.Once
	err  string
}

// checkAuthorization checks that the config `steward nats-users` writes,
// the one compose and Kubernetes start nats with, gives each plane (and
// the archiver) a user with permissions, and that a server started from it
// refuses a client that names no user. It runs once for every deployment that uses it.
func checkAuthorization(t *testing.T) {
	t.Helper()
	authorization.once.Do(func() { authorization.err = authorizationFault(t.TempDir()) })
	if authorization.err != "" {
		t.Error(authorization.err)
	}
}

func authorizationFault(dir string) string {
	var out bytes.Buffer
	if code := app.Main([]string{"nats-users", "--out", dir}, &out, &out); code != 0 {
		return "steward nats-users failed: " + out.String()
	}
	opts, err := server.ProcessConfigFile(filepath.Join(dir, natsusers.ConfigDir, natsusers.ConfigFile))
	if err != nil {
		return "nats cannot read the users nats-users writes: " + err.Error()
	}
	// One user per plane, and the archiver's (docs/archives.md), which
	// only steward archive run connects as.
	if len(opts.Nkeys) != len(planes)+1 {
		return fmt.Sprintf("users.conf has %d nkey users, want one per plane and the archiver", len(opts.Nkeys))
	}
	for _, u := range opts.Nkeys {
		if u.Permissions == nil || u.Permissions.Publish == nil || u.Permissions.Subscribe == nil {
			return "users.conf: user " + u.Nkey + " may publish or subscribe to anything"
		}
	}
	opts.Port, opts.NoLog, opts.NoSigs = -1, true, true
	s, err := server.NewServer(opts)
	if err != nil {
		return err.Error()
	}
	s.Start()
	defer s.Shutdown()
	if !s.ReadyForConnections(10 * time.Second) {
		return "nats from users.conf did not start"
	}
	nc, err := nats.Connect(s.ClientURL(), nats.MaxReconnects(0))
	if err == nil {
		nc.Close()
		return "nats from users.conf took a client that names no user"
	}
	if !errors.Is(err, nats.ErrAuthorization) {
		return "a client naming no user: " + err.Error() + ", want an authorization violation"
	}
	return ""
}
