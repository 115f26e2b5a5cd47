package app

import (
	"bytes"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"

	"github.com/steward-run/steward/pkg/a2a"
	"github.com/steward-run/steward/pkg/rpc"
)

// a2aFlagUsage is --a2a-skills', for dev and the gateway: the two that
// serve every service on one address, which A2A calls need.
const a2aPublicURLUsage = "`URL` clients reach the API at (scheme, host, and any path prefix a proxy strips), named in the A2A agent card; default: the request's Host header, which any caller may set (docs/a2a.md)"

const a2aFlagUsage = "`FILE` of A2A skills, each a contract template and the agent who works its tasks: serve the A2A agent card (" + a2a.CardPath + ") and JSON-RPC endpoint (" + a2a.RPCPath + ") beside the API, under the same tokens (docs/a2a.md)"

// a2aRoutes are the A2A card and endpoint of the skills in skillsFile,
// whose calls go to the API at self() as their callers. With cert, the
// API is HTTPS under that certificate, and the calls trust it alone.
func a2aRoutes(skillsFile, publicURL string, self func() string, cert *tls.Certificate, logger *slog.Logger) (map[string]http.Handler, error) {
	skills, err := a2a.LoadSkills(skillsFile)
	if err != nil {
		return nil, err
	}
	if publicURL != "" {
		if publicURL, err = a2a.ParsePublicURL(publicURL); err != nil {
			return nil, fmt.Errorf("--a2a-public-url: %w", err)
		}
	}
	transport := http.DefaultTransport.(*http.Transport).Clone()
	if cert != nil {
		own := cert.Certificate[0]
		// The calls go to this process's own listener: its own certificate
		// is the one to expect, whatever names it carries.
		transport.TLSClientConfig = &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: true, VerifyConnection: func(cs tls.ConnectionState) error {
			if len(cs.PeerCertificates) == 0 || !bytes.Equal(cs.PeerCertificates[0].Raw, own) {
				return errors.New("the API presented another certificate than its own")
			}
			return nil
		}}
	}
	h, err := a2a.New(a2a.Config{
		Name: "Steward", Version: "1", Skills: skills, API: self, Logger: logger, PublicURL: publicURL,
		Description: "Durable, governed tasks: each skill opens a task under a contract (owners, budget, risk tier, acceptance) that a Steward agent works",
		Client:      &http.Client{Transport: transport, Timeout: 0}, // streams last as long as their task
	})
	if err != nil {
		return nil, err
	}
	return h.Routes(), nil
}

// selfURL is a base URL this process reaches its own listener at: addr
// with an unspecified host (0.0.0.0, ::) made loopback.
func selfURL(scheme, addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err == nil {
		if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
			host = "127.0.0.1"
		}
		addr = net.JoinHostPort(host, port)
	}
	return scheme + "://" + addr
}

// a2aOptions mount the A2A routes of --a2a-skills on the API's listener.
func (m *Server) a2aOptions() ([]rpc.Option, error) {
	scheme, cert := "http", (*tls.Certificate)(nil)
	if m.TLSCert != "" {
		c, err := tls.LoadX509KeyPair(m.TLSCert, m.TLSKey)
		if err != nil {
			return nil, fmt.Errorf("--tls-cert/--tls-key: %w", err)
		}
		scheme, cert = "https", &c
	}
	routes, err := a2aRoutes(m.A2ASkills, m.A2APublicURL, func() string { return selfURL(scheme, m.rpc.Addr()) }, cert, m.logger)
	if err != nil {
		return nil, fmt.Errorf("--a2a-skills: %w", err)
	}
	opts := make([]rpc.Option, 0, len(routes))
	for pattern, h := range routes {
		opts = append(opts, rpc.WithHandler(pattern, h))
	}
	return opts, nil
}

// mountA2A mounts the A2A routes of the gateway's --a2a-skills on mux,
// calling the API through the gateway itself, at self().
func (f *gatewayFlags) mountA2A(mux *http.ServeMux, self func() string, logger *slog.Logger) error {
	if f.a2aSkills == "" {
		return nil
	}
	var cert *tls.Certificate
	if f.tlsCert != "" {
		c, err := tls.LoadX509KeyPair(f.tlsCert, f.tlsKey)
		if err != nil {
			return fmt.Errorf("--tls-cert/--tls-key: %w", err)
		}
		cert = &c
	}
	routes, err := a2aRoutes(f.a2aSkills, f.a2aPublicURL, self, cert, logger)
	if err != nil {
		return fmt.Errorf("--a2a-skills: %w", err)
	}
	for pattern, h := range routes {
		mux.Handle(pattern, h)
	}
	return nil
}
