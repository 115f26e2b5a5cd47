package app

import (
	"cmp"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/steward-run/steward/pkg/calltoken"
	"github.com/steward-run/steward/pkg/credential"
	"github.com/steward-run/steward/pkg/egress"
	"github.com/steward-run/steward/services/control"
	"github.com/steward-run/steward/services/execution"
	"github.com/steward-run/steward/services/execution/adapter"
	"github.com/steward-run/steward/services/governance"
	"github.com/steward-run/steward/services/state"
)

// ParseFlags reads the flags of mode ("dev" or "serve").
func (m *Server) ParseFlags(mode string, args []string) error {
	m.Mode = mode
	fs := flag.NewFlagSet("steward "+mode, flag.ContinueOnError)
	fs.SetOutput(m.stderr)
	fs.StringVar(&m.Addr, "addr", DefaultAddr, "`HOST:PORT` to serve Connect, gRPC, gRPC-Web, /healthz and (without --metrics-addr) /metrics on")
	fs.StringVar(&m.MetricsAddr, "metrics-addr", "", "`HOST:PORT` to serve /metrics on instead of --addr, so that a network rule can keep it to the scraper while the API stays open")
	fs.StringVar(&m.LogLevel, "log-level", "info", "debug, info, warn or error")
	fs.StringVar(&m.ToolsFile, "tools", "", "`FILE` of tool contracts to register at start; no tenant may register their names (execution plane)")
	fs.DurationVar(&m.MCPListTTL, "mcp-list-ttl", adapter.DefaultMCPListTTL, "how long an MCP server's tools/list answer is reused before a call lists its tools again to check the pinned digest; 0 lists before every call (docs/mcp.md) (execution plane; `DURATION`)")
	fs.Func("tool-egress-allow", "`CIDR,...` ranges (or addresses) tenants' tools may call though they are loopback, link-local, private or this machine's; Steward's own --addr and --nats-listen stay refused (docs/tenants.md#tools); repeat or separate by commas (execution plane)", func(s string) error {
		allow, err := egress.ParseAllow(s)
		m.EgressAllow = append(m.EgressAllow, allow...)
		return err
	})
	fs.Func("reserved-tool-names", "`NAME,...` tool names no tenant may register, compared without case: the platform's tools to come (the --tools file's are reserved already); repeat or separate by commas (execution plane)", func(s string) error {
		for _, n := range strings.Split(s, ",") {
			if n = strings.TrimSpace(n); n != "" {
				m.ReservedTools = append(m.ReservedTools, n)
			}
		}
		return nil
	})
	fs.StringVar(&m.NotifyFile, "notify", "", "`FILE` of webhook sinks told when a person is needed (an approval, a question, a budget alert, a stall, an unknown outcome, a result to review, an end), reloaded on change (docs/notifications.md) (state plane)")
	fs.StringVar(&m.PolicyDir, "policy-dir", "", "`DIR` of Rego policies, reloaded on change; the built-in default bundle when empty (governance plane)")
	fs.StringVar(&m.Sandbox, "sandbox", "", "`DIR` the file.write built-in tool writes under (default: DATA/sandbox in dev, ./sandbox in serve)")
	fs.StringVar(&m.Worker, "worker", "", "this execution worker's `NAME` in permit claims, unique among live workers; a restart under the same name takes up its work at once, under another after --lease (default: dev-HOST in dev, HOST-PID in serve)")
	fs.DurationVar(&m.Lease, "lease", execution.DefaultLease, "how long an execution worker may go silent (no claim, dispatch or heartbeat on the log) holding an action before any live worker takes it over: a claim is dispatched, a call's outcome recorded unknown and reconciled (execution plane; `DURATION`, at least 1s)")
	authDefault := " (required in serve, or --insecure)"
	if mode == "dev" {
		authDefault = " (default: DATA/" + TokensFileName + ", created with four random tokens on first start)"
	}
	fs.StringVar(&m.AuthFile, "auth", "", "`FILE` of bearer tokens and the principals and roles they stand for, read again when it changes; every call needs one (see docs/auth.md)"+authDefault)
	m.JWT.register(fs)
	m.Stall.register(fs)
	m.Snapshots.register(fs)
	m.Evict.register(fs)
	m.Quotas.register(fs)
	m.Archive.register(fs)
	m.ContentKeys.register(fs)
	m.Traces.register(fs)
	fs.StringVar(&m.TLSCert, "tls-cert", "", "PEM `FILE` of the API's TLS certificate (chain), with --tls-key: serve HTTPS (HTTP/1.1 and HTTP/2) instead of cleartext")
	fs.StringVar(&m.TLSKey, "tls-key", "", "PEM `FILE` of the private key of --tls-cert")
	fs.BoolVar(&m.Insecure, "insecure", false, "open mode, for trusted networks only: no tokens, callers name themselves in the Steward-Principal header, hold no roles, and the role table is not applied (a warning is logged at every start)")
	fs.StringVar(&m.SecretKey, "secret-key", "", "`FILE` of the 32-byte key (64 hex digits, as 'openssl rand -hex 32' writes it) that commits to and seals the tool parameters a schema marks secret (docs/secrets.md); the control and execution planes must share it. Dev creates it if missing (default: DATA/secret.key); serve never does ('steward secret-key' makes one), and without the flag refuses a proposal with secret parameters (control and execution planes)")
	fs.StringVar(&m.CredentialKey, "credential-key", "", "`FILE` of the Ed25519 private key (PEM, PKCS #8, as 'openssl genpkey -algorithm ed25519' writes it) that signs task credentials, created if missing; every governance replica must use the same key (default in dev: DATA/credential.key; required in serve) (governance plane)")
	fs.StringVar(&m.CallKey, "call-key", "", "`FILE` of the Ed25519 private key (PEM, PKCS #8) that signs every tool call, created if missing; its public key is served as a JWKS at "+calltoken.WellKnownPath+"; every execution replica must use the same key (default in dev: DATA/call.key, its JWKS in DATA/call-keys.json; in serve, without it calls are not signed) (execution plane; docs/calltokens.md)")
	m.Rotation.register(fs)
	fs.DurationVar(&m.CredentialTTL, "credential-ttl", credential.DefaultTTL, "how long a task `DURATION`'s credential lasts when the task's deadline does not end it sooner (governance plane)")
	fs.DurationVar(&m.PermitTTL, "permit-ttl", governance.DefaultPermitTTL, "how long a permit may be used after it is issued; a permit past it is not used, and its action is evaluated again (`DURATION`, 1s–24h; see docs/permits.md) (governance plane)")
	fs.Func("credential-trust-key", "public key `FILE` (PEM or hex) of an earlier credential key, still trusted for the credentials it signed: keep tasks working across a key rotation; repeat for several (governance plane)", func(path string) error {
		m.TrustedKeys = append(m.TrustedKeys, path)
		return nil
	})
	if mode == "dev" {
		fs.StringVar(&m.DataDir, "data", DefaultDataDir, "`DIR` for the embedded JetStream's files")
		fs.StringVar(&m.A2ASkills, "a2a-skills", "", a2aFlagUsage)
		fs.StringVar(&m.A2APublicURL, "a2a-public-url", "", a2aPublicURLUsage)
		m.Sync.register(fs)
		fs.StringVar(&m.NATSListen, "nats-listen", "", "also serve the embedded NATS on `HOST:PORT`, for `steward serve` processes; it takes only the users whose nkey seeds are in DATA/nats, one per plane and an admin (docs/nats.md)")
	} else {
		fs.StringVar(&m.NATSURL, "nats", "", "`URL` of the NATS JetStream server, e.g. nats://nats:4222")
		fs.StringVar(&m.Plane, "plane", "", "which plane to run: control, governance, execution or state")
		fs.Func("permit-key", "public key `FILE` (PEM or hex; 'steward audit key' writes it) of governance's credential key: a permit not signed by it is never executed; repeat for an earlier key still in use (execution plane)", func(path string) error {
			m.PermitKeyFiles = append(m.PermitKeyFiles, path)
			return nil
		})
		m.NATS.register(fs, "`FILE` of this plane's NATS nkey user seed ('steward nats-users' writes one per plane); without it or --nats-creds, the connection names no user (see docs/deploy.md)")
		fs.IntVar(&m.Replicas, "replicas", 1, "replicas of Steward's streams when they are created (3 on a JetStream cluster); an existing stream is left as it is, with a warning if it has fewer (raise it with 'steward nats-streams') or more")
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return errUsage
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("steward %s: unexpected argument %q", mode, fs.Arg(0))
	}
	return m.checkFlags(mode)
}

// checkFlags refuses flags that do not go together or are out of range,
// naming the flag, and sets up the logger --log-level asks for.
func (m *Server) checkFlags(mode string) error {
	var level slog.Level
	if err := level.UnmarshalText([]byte(m.LogLevel)); err != nil {
		return fmt.Errorf("--log-level: %q is not one of debug, info, warn, error", m.LogLevel)
	}
	m.logger = slog.New(slog.NewTextHandler(m.stderr, &slog.HandlerOptions{Level: level}))
	if _, _, err := net.SplitHostPort(m.Addr); err != nil {
		return fmt.Errorf("--addr: %q is not HOST:PORT: %v", m.Addr, err)
	}
	if mode == "serve" {
		if m.NATSURL == "" {
			return errors.New("--nats is required for steward serve")
		}
		switch m.Plane {
		case control.PlaneName, governance.PlaneName, execution.PlaneName, state.PlaneName:
		case "":
			return errors.New("--plane is required: control, governance, execution or state")
		default:
			return fmt.Errorf("--plane: %q is not one of control, governance, execution, state", m.Plane)
		}
		if err := m.NATS.check(); err != nil {
			return err
		}
	}
	if m.Mode == "serve" && (m.Replicas < 1 || m.Replicas > 5) {
		return fmt.Errorf("--replicas: %d is not between 1 and 5", m.Replicas)
	}
	if m.Lease < time.Second {
		return fmt.Errorf("--lease: %s is under 1s: heartbeats come every third of it, and clocks must agree well within it", m.Lease)
	}
	if m.CredentialTTL < credential.MinTTL || m.CredentialTTL > credential.MaxTTL {
		return fmt.Errorf("--credential-ttl: %s is outside %s–%s", m.CredentialTTL, credential.MinTTL, credential.MaxTTL)
	}
	if m.PermitTTL < time.Second || m.PermitTTL > 24*time.Hour {
		return fmt.Errorf("--permit-ttl: %s is outside 1s–24h", m.PermitTTL)
	}
	if m.Mode == "serve" && m.Plane == governance.PlaneName && m.CredentialKey == "" {
		// A key of its own would make every replica, and every restart,
		// sign with another key: credentials would stop verifying.
		return errors.New("--credential-key is required for the governance plane: every governance replica signs task credentials with this one Ed25519 key (openssl genpkey -algorithm ed25519 -out credential.key; it is created if the file is missing)")
	}
	if m.NATSListen != "" {
		if _, port, err := net.SplitHostPort(m.NATSListen); err != nil {
			return fmt.Errorf("--nats-listen: %q is not HOST:PORT: %v", m.NATSListen, err)
		} else if _, err := strconv.Atoi(port); err != nil {
			return fmt.Errorf("--nats-listen: port %q is not a number", port)
		}
	}
	if err := cmp.Or(m.JWT.check(), m.Stall.check(), m.Snapshots.check(), m.Evict.check(), m.Quotas.check(), m.Rotation.check(m)); err != nil {
		return err
	}
	switch {
	case m.AuthFile != "" && m.Insecure:
		return errors.New("--auth and --insecure: give one, not both (--auth FILE checks bearer tokens; --insecure trusts the Steward-Principal header)")
	case m.JWT.on() && m.Insecure:
		return errors.New("--jwt-jwks/--jwt-issuer and --insecure: give one, not both (JWTs are checked; --insecure trusts the Steward-Principal header)")
	case m.Mode == "serve" && m.AuthFile == "" && !m.JWT.on() && !m.Insecure:
		return errors.New("--auth, --jwt-jwks/--jwt-issuer or --insecure is required for steward serve: --auth FILE of bearer tokens, JWTs signed by the keys of a JWKS file or an OIDC issuer (see docs/auth.md), or --insecure to trust the Steward-Principal header on a trusted network")
	case (m.TLSCert == "") != (m.TLSKey == ""):
		return errors.New("--tls-cert and --tls-key go together: the certificate and its private key")
	}
	return nil
}
