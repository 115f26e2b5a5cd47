package app

import (
	"fmt"
	"net"
	"path/filepath"
	"strconv"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/steward-run/steward/pkg/embedded"
	"github.com/steward-run/steward/pkg/natsperm"
)

// startDevNATS starts dev's embedded server, which takes only Steward's
// users (seeds in DATA/nats, created on first start), and connects: the
// process's own setup and reading connection as the admin, and one
// connection per plane as that plane's user, which the planes' writes go
// through, so that the server refuses a plane's write of what it does not
// own here as it does in serve mode (docs/nats.md).
func (m *Server) startDevNATS(opts []nats.Option) error {
	users, err := embedded.LoadOrCreateUsers(filepath.Join(m.DataDir, embedded.UsersDir))
	if err != nil {
		return fmt.Errorf("--data: %w", err)
	}
	cfg := m.embeddedConfig(users)
	if m.NATSListen != "" {
		host, port, _ := net.SplitHostPort(m.NATSListen)
		cfg.Host = host
		cfg.Port, _ = strconv.Atoi(port)
		if cfg.Port == 0 {
			cfg.Port = -1 // any free port
		}
		if host != "" && !loopback(m.NATSListen) {
			// The embedded server takes no TLS: its users' seeds never
			// cross (a client signs the server's nonce), but every event,
			// with tasks' content and results, does, in clear.
			m.logger.Warn("the embedded NATS serves " + m.NATSListen + " in cleartext, off this machine's loopback: every event on the log, with tasks' parameters and results, crosses the network unencrypted; listen on 127.0.0.1 and tunnel, or run a NATS with TLS and steward serve (docs/deploy.md)")
		}
	}
	if cfg.SyncAlways {
		m.logger.Info("the embedded JetStream syncs every append to disk before acknowledging it (--sync always)")
	}
	bus, err := embedded.Start(cfg)
	if err != nil {
		return err
	}
	m.bus = bus
	admin, err := users.Options(embedded.AdminUser)
	if err != nil {
		return err
	}
	if m.nc, err = bus.Connect(append(opts, admin...)...); err != nil {
		return err
	}
	m.writers = map[string]jetstream.JetStream{}
	for _, plane := range natsperm.Planes() {
		own, err := users.Options(plane)
		if err != nil {
			return err
		}
		own = append(own, nats.Name("steward dev "+plane), nats.ErrorHandler(m.natsRefused(plane)))
		nc, err := bus.Connect(append(opts, own...)...)
		if err != nil {
			return fmt.Errorf("nats user %s: %w", plane, err)
		}
		m.planeConns = append(m.planeConns, nc)
		if m.writers[plane], err = jetstream.New(nc); err != nil {
			return err
		}
	}
	return nil
}

// embeddedConfig is the embedded server's configuration the flags ask
// for, taking users.
func (m *Server) embeddedConfig(users *embedded.Users) embedded.Config {
	return embedded.Config{StoreDir: m.DataDir, Users: users, SyncAlways: m.Sync.Always()}
}
