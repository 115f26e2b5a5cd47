package app

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/steward-run/steward/pkg/action"
	"github.com/steward-run/steward/pkg/backup"
	"github.com/steward-run/steward/pkg/bucket"
	"github.com/steward-run/steward/pkg/credential"
	"github.com/steward-run/steward/pkg/egress"
	"github.com/steward-run/steward/pkg/eventlog"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/natsperm"
	"github.com/steward-run/steward/pkg/secret"
	"github.com/steward-run/steward/pkg/stores"
	"github.com/steward-run/steward/pkg/taskstore"
	"github.com/steward-run/steward/pkg/timer"
	"github.com/steward-run/steward/pkg/toolreg"
	"github.com/steward-run/steward/services/control"
	"github.com/steward-run/steward/services/execution"
	"github.com/steward-run/steward/services/execution/adapter"
	"github.com/steward-run/steward/services/execution/limit"
	"github.com/steward-run/steward/services/governance"
	"github.com/steward-run/steward/services/governance/policy"
	"github.com/steward-run/steward/services/state"
	"github.com/steward-run/steward/services/state/notify"
)

// ToolKVBucket is the bucket the kv.append built-in tool writes to.
const ToolKVBucket = natsperm.ToolKVBucket

// selectPlanes builds the planes this process runs, with what each needs.
// In dev mode they share one tool registry and one set of stores, each
// plane writing through its own NATS user (stores.Set.As).
func (m *Server) selectPlanes(ctx context.Context, js jetstream.JetStream, st *stores.Set) ([]plane, error) {
	want := []string{control.PlaneName, governance.PlaneName, execution.PlaneName, state.PlaneName}
	if m.Mode == "serve" {
		want = []string{m.Plane}
	}
	// The key of secret parameters also keys the digests shown to who
	// may not read a task's content (docs/results.md); without one they
	// are hidden from them.
	sealer, err := m.secretSealer()
	if err != nil {
		return nil, err
	}
	var planes []plane
	// A control plane beside a state plane answers ProposeAction with
	// wait from the state plane's views, which is built after it.
	outcomes := &localOutcomes{}
	now := processClock() // one clock for every plane
	for _, name := range want {
		ps := st.As(name)
		log, tools, requests, results, timers := ps.Log, ps.Tools, ps.Requests, ps.Results, ps.Timers
		switch name {
		case control.PlaneName:
			planes = append(planes, control.New(log, m.logger, control.Config{Tasks: ps.Tasks, Tools: tools, Requests: requests, Results: results, Secrets: sealer, Timers: timers, Quotas: m.Quotas.Quotas, Outcomes: outcomes.of(want), Now: now}))
		case governance.PlaneName:
			engine, err := policy.Load(ctx, m.PolicyDir)
			if err != nil {
				return nil, fmt.Errorf("--policy-dir: %w", err)
			}
			m.logger.Info("policy bundle loaded", "revision", engine.Revision(), "dir", m.PolicyDir)
			signer, err := m.credentialSigner()
			if err != nil {
				return nil, err
			}
			var trusted []ed25519.PublicKey
			for _, path := range m.TrustedKeys {
				pub, err := credential.LoadPublicKey(path)
				if err != nil {
					return nil, fmt.Errorf("--credential-trust-key: %w", err)
				}
				trusted = append(trusted, pub)
			}
			// In dev, execution (built next) checks permits against the
			// keys governance signs and trusts.
			m.permitKeys = append([]ed25519.PublicKey{signer.PublicKey()}, trusted...)
			m.signedHere = signer.Recent()
			planes = append(planes, governance.New(log, m.logger, governance.Config{
				Tasks: ps.Tasks, Engine: engine, Tools: tools, Requests: requests, Timers: timers,
				Signer: signer, TrustedKeys: trusted, CredentialTTL: m.CredentialTTL, PermitTTL: m.PermitTTL,
				Digest: sealer.Digest, Policy: ps.Policy, Now: now,
			}))
		case execution.PlaneName:
			p, err := m.executionPlane(ctx, js, log, ps.Tasks, tools, requests, results, timers, now)
			if err != nil {
				return nil, err
			}
			planes = append(planes, p)
		case state.PlaneName:
			if m.NotifyFile != "" {
				if m.notifier, err = notify.New(notify.Config{Log: log, Tasks: ps.Tasks, File: m.NotifyFile, Logger: m.logger, Now: now}); err != nil {
					return nil, fmt.Errorf("--notify: %w", err)
				}
			}
			cfg, err := m.Snapshots.config(ctx, m, js, m.Evict.config(m.Stall.config(state.Config{Tasks: ps.Tasks, Results: results, Requests: requests, Policy: ps.Policy, Digest: sealer.Digest, Notify: m.notifier, Now: now})))
			if err != nil {
				return nil, err
			}
			if cfg.Archive, err = m.Archive.reader(); err != nil {
				return nil, err
			}
			outcomes.state = state.New(log, m.logger, cfg)
			planes = append(planes, outcomes.state)
		}
	}
	return planes, nil
}

// localOutcomes hands a control plane's waits to the state plane of the
// same process (control.Config.Outcomes), which is set once built.
type localOutcomes struct{ state *state.Plane }

// of returns o if the planes want include a state plane, else nil: a
// control plane alone answers at once.
func (o *localOutcomes) of(want []string) control.Outcomes {
	if !slices.Contains(want, state.PlaneName) {
		return nil
	}
	return o
}

func (o *localOutcomes) WaitAction(ctx context.Context, taskID, actionID string, seen uint64) (*stewardv1.GetActionResponse, error) {
	return o.state.WaitAction(ctx, taskID, actionID, seen)
}

// CredentialKeyFile is the name of the credential signing key in a dev
// server's data directory.
const CredentialKeyFile = "credential.key"

// credentialSigner loads the key governance signs task credentials with:
// --credential-key, created there if missing; in dev by default
// DATA/credential.key, created on first start and kept, so that
// credentials issued before a restart still verify. Serve requires the
// flag (ParseFlags): every replica must sign with the same key.
func (m *Server) credentialSigner() (*credential.Signer, error) {
	path := m.CredentialKey
	if path == "" && m.Mode == "dev" {
		path = filepath.Join(m.DataDir, CredentialKeyFile)
	}
	key, created, err := credential.LoadOrCreateKey(path)
	if err != nil {
		return nil, fmt.Errorf("--credential-key: %w", err)
	}
	s := credential.NewSigner(key)
	switch {
	case created && m.Mode == "serve":
		m.logger.Warn("created a new credential signing key; every governance replica must share this one key (mount one key file, such as a Kubernetes Secret, into all of them)",
			"file", path, "key_id", s.KeyID())
	case created:
		m.logger.Info("created a credential signing key", "file", path, "key_id", s.KeyID())
	}
	m.logger.Info("signing task credentials", "key_id", s.KeyID(), "file", path)
	return s, nil
}

// SecretKeyFile is the name of the secret parameters' key in a dev
// server's data directory.
const SecretKeyFile = "secret.key"

// secretSealer loads the key that commits to and seals secret tool
// parameters. In dev it is --secret-key or DATA/secret.key, created on
// first start and kept, so that sealed values still open after a restart.
// Serve reads --secret-key and never creates it: the control and execution
// planes run apart and must share one key, and two planes each making one
// on a first start would seal what the other cannot open. In serve without
// the flag it returns nil: that plane then refuses (control) or fails
// (execution) only actions with secret parameters.
func (m *Server) secretSealer() (*secret.Sealer, error) {
	if m.sealer != nil {
		return m.sealer, nil // dev: control and execution share one
	}
	path := m.SecretKey
	if path == "" && m.Mode == "dev" {
		path = filepath.Join(m.DataDir, SecretKeyFile)
	}
	if path == "" {
		return nil, nil
	}
	var key []byte
	var created bool
	var err error
	if m.Mode == "serve" {
		key, err = secret.LoadKey(path)
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("--secret-key: %s does not exist, and serve never creates it (the control and execution planes must share one key): make it once with 'steward secret-key --out=%s' or 'openssl rand -hex 32 > %s', and give that file to both (docs/deploy.md)", path, path, path)
		}
	} else {
		key, created, err = secret.LoadOrCreateKey(path)
	}
	if err != nil {
		return nil, fmt.Errorf("--secret-key: %w", err)
	}
	earlier, err := m.Rotation.earlierSecretKeys()
	if err != nil {
		return nil, err
	}
	if m.sealer, err = secret.New(key, earlier...); err != nil {
		return nil, fmt.Errorf("--secret-key: %w", err)
	}
	if len(earlier) > 0 {
		m.logger.Info("secret parameters: sealing under the first key, opening under each", "key_ids", m.sealer.KeyIDs())
	}
	if created {
		m.logger.Info("created a key for secret parameters; the control and execution planes must share it", "file", path)
	}
	return m.sealer, nil
}

// workerName is --worker, or else a name of the host's. dev is one
// process over its own data: a name that survives a restart lets it take
// up what it held at once, not after the lease. Services run several
// workers per host, so each process names itself.
func (m *Server) workerName() string {
	if m.Worker != "" {
		return m.Worker
	}
	host, _ := os.Hostname()
	if m.Mode == "serve" {
		return fmt.Sprintf("%s-%d", host, os.Getpid())
	}
	return "dev-" + host
}

func (m *Server) executionPlane(ctx context.Context, js jetstream.JetStream, log *eventlog.Log, tasks *taskstore.Store, tools *toolreg.Registry, requests, results *action.Store, timers *timer.Timers, now func() time.Time) (*execution.Plane, error) {
	kv := bucket.Config{Name: ToolKVBucket, Description: "records written by the kv.append built-in tool", Replicas: m.Replicas, WriteOnce: true, Logger: m.logger}
	if w, ok := m.writers[execution.PlaneName]; ok {
		// steward dev: js is its NATS's admin, which makes an older
		// bucket safe first; the tool's records are execution's to write.
		harden := kv
		harden.Harden = true
		if _, err := bucket.Open(ctx, js, harden); err != nil {
			return nil, err
		}
		js = w
	}
	toolKV, err := bucket.Open(ctx, js, kv)
	if err != nil {
		return nil, err
	}
	limitsKV, err := bucket.Open(ctx, js, limit.BucketConfig(m.Replicas, m.logger))
	if err != nil {
		return nil, err
	}
	cut, err := backup.ReadCut(ctx, js) // set by steward restore: docs/backup.md
	if err != nil {
		return nil, err
	}
	sandbox := m.Sandbox
	if sandbox == "" {
		sandbox = "sandbox"
		if m.Mode == "dev" {
			sandbox = filepath.Join(m.DataDir, "sandbox")
		}
	}
	builtin, err := adapter.NewBuiltin(adapter.BuiltinConfig{SandboxDir: sandbox, KV: toolKV, JS: js})
	if err != nil {
		return nil, fmt.Errorf("--sandbox: %w", err)
	}
	worker := m.workerName()
	keys, err := m.executionPermitKeys()
	if err != nil {
		return nil, err
	}
	secrets, err := m.secretSealer()
	if err != nil {
		return nil, err
	}
	var httpOpts []adapter.HTTPOption
	if signer, err := m.loadCallSigner(); err != nil {
		return nil, err
	} else if signer != nil {
		httpOpts = append(httpOpts, adapter.WithCallSigner(signer, nil))
	}
	mcpOpts := []adapter.MCPOption{adapter.WithMCPListTTL(m.MCPListTTL), adapter.WithMCPClock(now)}
	p, err := execution.New(log, m.logger, execution.Config{
		Tasks: tasks, Tools: tools, Requests: requests, Results: results, Worker: worker, Timers: timers, Lease: m.Lease, PermitKeys: keys, SignedHere: m.signedHere,
		Secrets: secrets, Limits: limit.New(limitsKV),
		Adapters:      adapter.Set{HTTP: adapter.NewHTTP(&http.Client{}, httpOpts...), Builtin: builtin, MCP: adapter.NewMCP(nil, mcpOpts...)},
		Egress:        egress.New(egress.Config{Allow: m.EgressAllow, Self: egress.Listeners(m.Addr, m.NATSListen)}),
		ReservedTools: m.ReservedTools,
		HTTPOptions:   httpOpts,
		MCPOptions:    mcpOpts,
		RestoreCut:    cut,
		Now:           now,
	})
	if err != nil {
		return nil, err
	}
	if m.ToolsFile != "" {
		if err := p.RegisterFile(ctx, m.ToolsFile); err != nil {
			return nil, fmt.Errorf("--tools: %w", err)
		}
	}
	return p, nil
}

// metricsHandler builds this process's own Prometheus registry (not the
// global one, so tests can run several servers in one process) and returns
// the /metrics handler over it. Every process reports Go runtime and process
// metrics, the lag of the durable consumers on the event and timer
// streams and the events set aside (steward_dead_letters), which need only
// the JetStream connection; a plane that has
// metrics of its own (the state plane's task metrics) adds its collector.
// A collector that fails, such as consumer lag while NATS is away, is
// logged and left out of that scrape; the rest is still served.
func (m *Server) metricsHandler(js jetstream.JetStream, log *eventlog.Log) (http.Handler, error) {
	reg := prometheus.NewRegistry()
	all := []prometheus.Collector{
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		eventlog.NewLagCollector(js, eventlog.DefaultLagTimeout, append([]string{log.Config().Stream}, natsperm.TimerStreams()...)...),
		eventlog.NewDeadLetterCollector(log, eventlog.DefaultLagTimeout),
		m.denied,
		m.answers,
	}
	for _, p := range m.planes {
		if c, ok := p.(interface{ Collector() prometheus.Collector }); ok {
			all = append(all, c.Collector())
		}
	}
	if m.notifier != nil {
		all = append(all, m.notifier.Collector())
	}
	for _, c := range all {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("register metrics: %w", err)
		}
	}
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{
		ErrorLog:      slog.NewLogLogger(m.logger.Handler(), slog.LevelWarn),
		ErrorHandling: promhttp.ContinueOnError,
		Registry:      reg,
	}), nil
}

// executionPermitKeys are the keys execution verifies permits with: in
// dev, governance's own (the planes share the process); in serve, those
// of --permit-key. A serve execution plane without them checks no
// permit, and says so at every start.
func (m *Server) executionPermitKeys() ([]ed25519.PublicKey, error) {
	if m.Mode == "dev" {
		return m.permitKeys, nil
	}
	var keys []ed25519.PublicKey
	for _, path := range m.PermitKeyFiles {
		pub, err := credential.LoadPublicKey(path)
		if err != nil {
			return nil, fmt.Errorf("--permit-key: %w", err)
		}
		keys = append(keys, pub)
	}
	if len(keys) == 0 {
		m.logger.Warn("permit signatures are not checked: pass --permit-key with governance's credential public key (steward audit key) so that a permit governance did not sign is never executed")
		return nil, nil
	}
	ids := make([]string, len(keys))
	for i, k := range keys {
		ids[i] = credential.KeyID(k)
	}
	m.logger.Info("verifying permits", "key_ids", ids)
	return keys, nil
}
