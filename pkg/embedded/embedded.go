// Package embedded runs a NATS JetStream server inside the Steward process,
// for `steward dev` and for tests. Without a port it is socket-free: the
// process's own clients reach it in-process. With Users, it takes only
// Steward's own users, each plane with the permissions of pkg/natsperm.
package embedded

import (
	"fmt"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
)

// Config says how to run the embedded server.
type Config struct {
	// StoreDir holds JetStream's files. Required.
	StoreDir string
	// Host and Port to listen on for external clients; Port 0 means no
	// listener, -1 a random free port.
	Host string
	Port int
	// ReadyTimeout bounds start-up; default 10s.
	ReadyTimeout time.Duration
	// Users, when set, are the only ones who may connect, each with its
	// permissions (steward dev); without it anyone may, with every
	// permission (tests that look at one package).
	Users *Users
	// SyncAlways syncs every write to disk before it is acknowledged
	// (JetStream's sync_interval: always); without it, JetStream
	// acknowledges from the page cache and syncs every two minutes.
	SyncAlways bool
}

// Server is a running embedded NATS server.
type Server struct {
	ns *server.Server
}

// Start runs a JetStream server with file storage in cfg.StoreDir and
// waits until it accepts connections.
func Start(cfg Config) (*Server, error) {
	if cfg.StoreDir == "" {
		return nil, fmt.Errorf("embedded nats: store dir is required")
	}
	if cfg.ReadyTimeout == 0 {
		cfg.ReadyTimeout = 10 * time.Second
	}
	opts := &server.Options{
		ServerName: "steward-embedded",
		JetStream:  true,
		StoreDir:   cfg.StoreDir,
		NoSigs:     true, // the host process owns signal handling
		NoLog:      true,
		MaxPayload: 8 << 20,
		SyncAlways: cfg.SyncAlways,
	}
	if cfg.Users != nil {
		opts.Nkeys = cfg.Users.nkeyUsers()
	}
	if cfg.Port == 0 {
		opts.DontListen = true
	} else {
		opts.Host, opts.Port = cfg.Host, cfg.Port
		if opts.Host == "" {
			opts.Host = "127.0.0.1"
		}
	}
	ns, err := server.NewServer(opts)
	if err != nil {
		return nil, fmt.Errorf("embedded nats: %w", err)
	}
	ns.Start()
	if !ns.ReadyForConnections(cfg.ReadyTimeout) {
		ns.Shutdown()
		return nil, fmt.Errorf("embedded nats: not ready after %s", cfg.ReadyTimeout)
	}
	return &Server{ns: ns}, nil
}

// SyncsAlways reports whether JetStream syncs every write before it
// acknowledges it (Config.SyncAlways).
func (s *Server) SyncsAlways() bool {
	c := s.ns.JetStreamConfig()
	return c != nil && c.SyncAlways
}

// Connect returns a client connection to the server that bypasses the
// network stack. Its writes take no deadline: the other end of the pipe is
// this process's own server, which a deadline cannot hurry, and setting
// one costs a timer on every write.
func (s *Server) Connect(opts ...nats.Option) (*nats.Conn, error) {
	opts = append([]nats.Option{nats.InProcessServer(s.ns), nats.Name("steward"), nats.FlusherTimeout(0)}, opts...)
	return nats.Connect("", opts...)
}

// ClientURL returns the URL external clients use, or "" without a listener.
func (s *Server) ClientURL() string {
	if s.ns.Addr() == nil {
		return ""
	}
	return s.ns.ClientURL()
}

// Shutdown stops the server and waits for it to finish.
func (s *Server) Shutdown() {
	s.ns.Shutdown()
	s.ns.WaitForShutdown()
}
