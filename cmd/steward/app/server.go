package app

import (
	"context"
	"crypto/ed25519"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"sync"
	"time"

	"github.com/steward-run/steward/pkg/calltoken"
	"github.com/steward-run/steward/pkg/credential"
	"github.com/steward-run/steward/pkg/eventlog"
	"github.com/steward-run/steward/pkg/secret"
	"github.com/steward-run/steward/pkg/stores"
	"github.com/steward-run/steward/pkg/tracing"

	"connectrpc.com/connect"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/steward-run/steward/pkg/embedded"
	"github.com/steward-run/steward/pkg/natsperm"
	"github.com/steward-run/steward/pkg/rpc"
	"github.com/steward-run/steward/services/control"
	"github.com/steward-run/steward/services/execution"
	"github.com/steward-run/steward/services/state/notify"
)

// Defaults for the server commands.
const (
	DefaultAddr    = "127.0.0.1:7700"
	DefaultDataDir = ".steward/data"
)

// plane is what the wiring needs of each plane.
type plane interface {
	Start(ctx context.Context) error
	Stop()
	Services(opts []connect.HandlerOption) []rpc.Service
}

// Server is a running `steward dev` or `steward serve`: flags, then Run,
// then Close. Tests use it directly with Addr ":0" and a temporary data
// directory.
type Server struct {
	// Flags.
	Mode        string // "dev" or "serve"
	Addr        string
	MetricsAddr string // serves /metrics on a listener of its own, not on Addr
	DataDir     string
	NATSListen  string   // dev: also serve the embedded NATS here
	Sync        SyncFlag // dev: when the embedded JetStream syncs to disk
	NATSURL     string   // serve: the external NATS
	ToolsFile   string   // execution: tool contracts to register at start
	// execution: how long an MCP server's tool listing is reused
	MCPListTTL time.Duration
	NotifyFile string // state: webhook sinks told when a person is needed
	A2ASkills  string // dev: the A2A skills file (docs/a2a.md)
	// dev: the base URL the agent card names (--a2a-public-url)
	A2APublicURL string
	// execution: ranges tenants' tools may call though inside
	EgressAllow []netip.Prefix
	// execution: tool names no tenant may register
	ReservedTools []string
	PolicyDir     string        // governance: Rego bundle directory, watched for changes
	Sandbox       string        // execution: root for the file.write built-in tool
	Worker        string        // execution: this worker's name in claims
	Lease         time.Duration // execution: how long a silent worker keeps what it holds
	Plane         string        // serve: which plane
	Replicas      int           // serve: replicas of the streams when this process creates them
	LogLevel      string
	// AuthFile names the bearer tokens; without it (and without
	// Insecure), dev creates DATA/tokens.json and serve refuses to start.
	AuthFile string
	// Insecure is the open mode: callers name themselves in the
	// Steward-Principal header, taken on trust, and hold no roles.
	Insecure bool
	// governance: Ed25519 key that signs task credentials (see
	// credentialSigner for the default)
	CredentialKey string
	// SecretKey is the file of the key that commits to and seals secret
	// tool parameters (control and execution planes).
	SecretKey string
	// governance: public keys of earlier credential keys, still trusted
	TrustedKeys []string
	// governance: how long a credential lasts when its task has no
	// earlier deadline
	CredentialTTL time.Duration
	// governance: how long a permit may be used after it is issued
	PermitTTL time.Duration
	// execution (serve): public keys permits must be signed with
	PermitKeyFiles []string
	// execution: Ed25519 key that signs tool calls (loadCallSigner)
	CallKey string
	// Rotation: earlier and next keys kept beside the current ones
	Rotation rotationFlags
	// serve: this plane's NATS user and TLS to NATS
	NATS NATSFlags
	// JWT verifies bearer JWTs, beside (or, in serve, instead of) the
	// token file.
	JWT         JWTFlags
	Stall       StallFlags      // state: when the watchdog marks a task stalled
	Snapshots   SnapshotFlags   // how often the state plane snapshots its views
	ContentKeys ContentKeysFlag // the key form new stored content takes
	// Archive: where the state plane reads archived tasks.
	Archive ArchiveFlags
	// Evict: when the state plane evicts an ended task's whole view.
	Evict EvictFlags
	// Quotas bound what one principal and one tenant hold (control).
	Quotas QuotaFlags
	Traces TraceFlags // where spans go (docs/tracing.md)
	// TLSCert and TLSKey serve the API over TLS.
	TLSCert, TLSKey string

	stdout, stderr io.Writer
	logger         *slog.Logger
	tracing        *tracing.Provider
	// permitKeys are governance's keys, for the execution plane of a dev
	// server (set when governance is built).
	permitKeys []ed25519.PublicKey
	// signedHere are the permits governance signed lately, when it runs
	// in this process: execution takes them without a second Ed25519 check.
	signedHere *credential.Recent
	// sealer is the secret parameters' key, loaded once (secretSealer).
	sealer *secret.Sealer
	// callSigner signs tool calls, when this process runs execution.
	callSigner *calltoken.Signer
	callKeys   []ed25519.PublicKey // what the call JWKS publishes, the signing key first

	// notifier tells the sinks of NotifyFile, when the state plane runs
	// here with one.
	notifier *notify.Notifier
	// denied counts the calls the RPC edge refused
	denied *prometheus.CounterVec
	// answers is the budget of response bytes in flight of all the API's
	// connections, reported on /metrics.
	answers *rpc.ResponseBudget

	bus    *embedded.Server
	nc     *nats.Conn
	planes []plane
	stops  []func() // background work to end after the planes
	rpc    *rpc.Server
	served chan error

	// dev: each plane's own NATS connection, which its writes go through
	planeConns []*nats.Conn
	writers    map[string]jetstream.JetStream
}

// NewServer returns a server command writing to stdout and stderr.
func NewServer(stdout, stderr io.Writer) *Server {
	return &Server{stdout: stdout, stderr: stderr, served: make(chan error, 1)}
}

// Run connects to (or starts) NATS, opens the log, starts the planes and
// begins serving. It returns once the server is listening.
func (m *Server) Run(ctx context.Context) error {
	if m.logger == nil {
		m.logger = slog.New(slog.NewTextHandler(m.stderr, nil))
	}
	if m.Mode == "serve" && (m.Plane == control.PlaneName || m.Plane == execution.PlaneName) {
		// A missing or malformed secret key stops the start before
		// anything connects, not at the first secret proposal.
		if _, err := m.secretSealer(); err != nil {
			return err
		}
	}
	if err := m.connect(); err != nil {
		return err
	}
	js, err := jetstream.New(m.nc)
	if err != nil {
		return err
	}
	// dev is one process over its own embedded server: the only reader of
	// its consumers, connected as its NATS's admin.
	dev := m.Mode == "dev"
	if m.tracing, err = m.tracer(ctx); err != nil {
		return err
	}
	st, err := m.openStores(ctx, js, stores.Config{Logger: m.logger, Replicas: m.Replicas, SoleConsumer: dev, Writers: m.writers, Harden: dev, Plane: m.Plane, Tracing: m.traceProvider(), SharedKeys: m.ContentKeys.Shared()})
	if err != nil {
		return err
	}
	// The planes run on a context of their own, which Close ends after
	// stopping them: a signal ends ctx at once, and reactions cut short
	// while the API still finishes its calls would fail and come again
	// (to this process too) until the planes stopped.
	planes, endPlanes := context.WithCancel(context.WithoutCancel(ctx))
	m.stops = append(m.stops, endPlanes, st.Close)
	log := st.Log
	if m.planes, err = m.selectPlanes(planes, js, st); err != nil {
		return err
	}
	opts, err := m.handlerOptions(ctx, st.Tasks)
	if err != nil {
		return err
	}
	opts = m.traceCalls(opts)
	var services []rpc.Service
	for _, p := range m.planes {
		if err := p.Start(planes); err != nil {
			return err
		}
		services = append(services, p.Services(opts)...)
	}
	listen, err := m.listenOptions(js, log)
	if err != nil {
		return err
	}
	m.rpc, err = rpc.Listen(m.Addr, services, listen...)
	if err != nil {
		return fmt.Errorf("--addr %s: %w", m.Addr, err)
	}
	go func() { m.served <- m.rpc.Serve() }()
	m.announce()
	return nil
}

// listenOptions are how the API listens besides its services: /metrics,
// TLS, in dev the CLI's identity challenge, and in the open mode on
// loopback the check of Host.
func (m *Server) listenOptions(js jetstream.JetStream, log *eventlog.Log) ([]rpc.Option, error) {
	listen, err := m.routes(js, log)
	if err != nil {
		return nil, err
	}
	listen = append(listen, rpc.WithResponseBudget(m.answers))
	if m.TLSCert != "" {
		opt, err := rpc.WithTLS(m.TLSCert, m.TLSKey)
		if err != nil {
			return nil, fmt.Errorf("--tls-cert/--tls-key: %w", err)
		}
		listen = append(listen, opt)
	}
	if m.A2ASkills != "" {
		routes, err := m.a2aOptions()
		if err != nil {
			return nil, err
		}
		listen = append(listen, routes...)
	}
	if m.Mode == "dev" {
		// The CLI sends the admin token it reads in the data directory
		// only to a server that proves it owns that directory.
		key, err := loadIdentityKey(m.DataDir, true)
		if err != nil {
			return nil, fmt.Errorf("--data: %w", err)
		}
		listen = append(listen, rpc.WithHandler("GET "+IdentityPath, identityHandler(key, func() string { return m.rpc.Addr() })))
	}
	if m.Insecure && loopback(m.Addr) {
		// The open mode trusts whoever calls: on this machine, a browser's
		// page under a rebound name would be one.
		listen = append(listen, rpc.WithLoopbackHosts())
	}
	return listen, nil
}

// tokens returns the bearer tokens calls may carry, or nil in the open
// mode (--insecure), which it warns of at every start, and in serve with
// JWTs and no --auth. Without --auth, dev uses DATA/tokens.json, creating
// it on first start and saying so once. The file is read again when it
// changes (handlerOptions), so a token rotates without a restart.
func (m *Server) tokens() (*rpc.TokenFile, error) {
	if m.Insecure {
		m.logger.Warn("open mode (--insecure): every caller is trusted to name themselves in the Steward-Principal header and holds no roles; anyone who can reach " + m.Addr + " can act as anyone. Use it on a trusted network only")
		return nil, nil
	}
	if m.AuthFile == "" && m.Mode == "serve" {
		return nil, nil // JWTs only (ParseFlags saw to it)
	}
	path, flagName := m.AuthFile, "--auth"
	if path == "" {
		created := false
		var err error
		if path, created, err = devTokens(m.DataDir); err != nil {
			return nil, fmt.Errorf("--data: token file: %w", err)
		}
		if created {
			m.printTokensHelp(path)
		} else {
			m.logger.Info("bearer tokens from the data directory", "file", path)
		}
		flagName = "--data"
	}
	tokens, err := rpc.OpenTokenFile(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", flagName, err)
	}
	return tokens, nil
}

// connect starts the embedded server (dev) or dials the external one.
func (m *Server) connect() error {
	opts := []nats.Option{nats.Name("steward " + m.Mode + " " + m.Plane), nats.MaxReconnects(-1)}
	if m.Mode == "serve" {
		auth, err := m.NATS.options(natsperm.Inbox(m.Plane))
		if err != nil {
			return err
		}
		if !m.NATS.authenticated() {
			m.logger.Warn("NATS connection names no user: nothing stops another client of this NATS from writing this plane's events; pass --nats-nkey or --nats-creds (steward nats-users writes a user per plane)")
		}
		opts = append(opts, nats.ErrorHandler(m.natsRefused(m.Plane)), nats.RetryOnFailedConnect(false))
		nc, err := nats.Connect(m.NATSURL, append(opts, auth...)...)
		if err != nil {
			return fmt.Errorf("--nats %s: %w", m.NATSURL, err)
		}
		m.nc = nc
		return nil
	}
	if err := os.MkdirAll(m.DataDir, 0o750); err != nil {
		return fmt.Errorf("--data: %w", err)
	}
	return m.startDevNATS(opts)
}

// URL returns the base URL of the RPC server, with the real port.
func (m *Server) URL() string { return m.rpc.URL() }

// Wait blocks until ctx ends or the server fails.
func (m *Server) Wait(ctx context.Context) error {
	select {
	case <-ctx.Done():
		return nil
	case err := <-m.served:
		return err
	}
}

// Close shuts down in the order that loses nothing: end open watch
// streams; stop the RPC server, letting running calls finish against live
// planes; stop the planes' reactions and projections; drain the NATS
// connection so that pending acks reach the server; stop the embedded
// server. It is safe to call after a failed Run.
func (m *Server) Close() {
	for _, p := range m.planes {
		if s, ok := p.(interface{ EndStreams() }); ok {
			s.EndStreams()
		}
	}
	if m.rpc != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_ = m.rpc.Shutdown(ctx)
		cancel()
	}
	// The planes stop side by side: each waits for its fetches in flight
	// to end (eventlog.ReactionPull), and none needs another stopped first.
	var stopping sync.WaitGroup
	for _, p := range m.planes {
		stopping.Go(p.Stop)
	}
	stopping.Wait()
	for _, stop := range m.stops {
		stop()
	}
	for _, nc := range m.planeConns {
		drain(nc, 5*time.Second)
	}
	if m.nc != nil {
		drain(m.nc, 5*time.Second)
	}
	if m.bus != nil {
		m.bus.Shutdown()
	}
}

// drain flushes and closes nc, waiting up to timeout for it to finish.
func drain(nc *nats.Conn, timeout time.Duration) {
	closed := make(chan struct{})
	nc.SetClosedHandler(func(*nats.Conn) { close(closed) })
	if err := nc.Drain(); err != nil {
		nc.Close()
		return
	}
	select {
	case <-closed:
	case <-time.After(timeout):
		nc.Close()
	}
}

// loopback reports whether addr (HOST:PORT) listens on this machine only.
func loopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	ip := net.ParseIP(host)
	return host == "localhost" || ip != nil && ip.IsLoopback()
}
