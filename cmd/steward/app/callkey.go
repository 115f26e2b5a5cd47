package app

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/steward-run/steward/pkg/calltoken"
	"github.com/steward-run/steward/pkg/console"
	"github.com/steward-run/steward/pkg/credential"
	"github.com/steward-run/steward/pkg/eventlog"
	"github.com/steward-run/steward/pkg/rpc"
)

// Files of the call key in a dev server's data directory: the private key
// the execution plane signs tool calls with, and its public JWKS.
const (
	CallKeyFile  = "call.key"
	CallKeysFile = "call-keys.json"
)

// loadCallSigner loads the key the execution plane signs tool calls with
// (docs/calltokens.md): --call-key, created there if missing; in dev by
// default DATA/call.key, whose JWKS it writes beside it (DATA/call-keys.json)
// for tools to read. Serve without the flag signs no call, and says so at
// every start. The key is execution's own, not governance's credential
// key: execution never holds governance's private key.
func (m *Server) loadCallSigner() (*calltoken.Signer, error) {
	path := m.CallKey
	if path == "" && m.Mode == "dev" {
		path = filepath.Join(m.DataDir, CallKeyFile)
	}
	if path == "" {
		m.logger.Warn("tool calls are not signed: pass --call-key FILE (an Ed25519 key, created if missing; every execution replica the same) so that tools can check a call comes from Steward (docs/calltokens.md)")
		return nil, nil
	}
	key, created, err := credential.LoadOrCreateKey(path)
	if err != nil {
		return nil, fmt.Errorf("--call-key: %w", err)
	}
	s := calltoken.NewSigner(key)
	if created && m.Mode == "serve" {
		m.logger.Warn("created a new call signing key; every execution replica must share this one key", "file", path, "key_id", s.KeyID())
	}
	published, err := m.Rotation.callKeySet(s.PublicKey())
	if err != nil {
		return nil, err
	}
	if m.Mode == "dev" {
		jwks, err := calltoken.MarshalJWKS(published...)
		if err != nil {
			return nil, err
		}
		if err := os.WriteFile(filepath.Join(m.DataDir, CallKeysFile), append(jwks, '\n'), 0o644); err != nil {
			return nil, fmt.Errorf("--data: %w", err)
		}
	}
	m.logger.Info("signing tool calls", "key_id", s.KeyID(), "file", path, "jwks", calltoken.WellKnownPath)
	m.callSigner, m.callKeys = s, published
	return s, nil
}

// routes are the plain HTTP handlers beside the services: /metrics (unless
// --metrics-addr serves it apart), and
// where this process signs tool calls, the call key as a JWKS at
// calltoken.WellKnownPath — public, like the key itself: no token needed.
func (m *Server) routes(js jetstream.JetStream, log *eventlog.Log) ([]rpc.Option, error) {
	metrics, err := m.metricsHandler(js, log)
	if err != nil {
		return nil, err
	}
	// The console is static and public: it holds no authority, and every
	// call it makes carries its person's own token (pkg/console).
	var routes []rpc.Option
	for _, pattern := range console.Patterns() {
		routes = append(routes, rpc.WithHandler(pattern, console.Handler()))
	}
	if m.MetricsAddr == "" {
		routes = append(routes, rpc.WithHandler("GET /metrics", metrics))
	} else if err := m.serveMetrics(metrics); err != nil {
		return nil, err
	}
	if m.callSigner == nil {
		return routes, nil
	}
	jwks, err := calltoken.MarshalJWKS(m.callKeys...)
	if err != nil {
		return nil, err
	}
	return append(routes, rpc.WithHandler("GET "+calltoken.WellKnownPath, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/jwk-set+json")
		w.Header().Set("Cache-Control", "max-age=300")
		_, _ = w.Write(jwks)
	}))), nil
}
