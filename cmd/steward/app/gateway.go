package app

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/steward-run/steward/pkg/console"
	"github.com/steward-run/steward/pkg/gateway"
	"github.com/steward-run/steward/pkg/rpc"
)

const gatewayUsage = `Usage:
  steward gateway --control URL[,URL...] --governance URL[,URL...]
                  --execution URL[,URL...] --state URL[,URL...] [--addr HOST:PORT]

One address for the clients of a services deployment: each Connect, gRPC or
gRPC-Web call goes, by the service in its path, to a healthy replica of the
plane that serves it. The gateway authenticates no one: the caller's
Authorization header goes through unchanged, and the plane checks it. It
serves gRPC reflection and health itself, GET /healthz (up) and GET /readyz
(every plane has a healthy replica). See docs/gateway.md.
`

// gatewayFlags are `steward gateway`'s flags.
type gatewayFlags struct {
	addr            string
	replicas        map[string][]*url.URL // by plane
	checkEvery      time.Duration
	logLevel        string
	tlsCert, tlsKey string
	planeCA         string
	a2aSkills       string
	a2aPublicURL    string
}

func (f *gatewayFlags) parse(args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("steward gateway", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, gatewayUsage); fs.PrintDefaults() }
	fs.StringVar(&f.addr, "addr", DefaultAddr, "`HOST:PORT` to serve Connect, gRPC, gRPC-Web, /healthz and /readyz on")
	f.replicas = map[string][]*url.URL{}
	for _, r := range PlaneRoutes() {
		fs.Func(r.Plane, "`URL,...` of each "+r.Plane+" plane replica (its steward serve --addr), http:// or https://; repeat or separate by commas; an http:// host name is one replica per address it resolves to, at each health check (serves "+strings.Join(r.Services, ", ")+")", func(s string) error {
			for _, raw := range strings.Split(s, ",") {
				u, err := replicaURL(strings.TrimSpace(raw))
				if err != nil {
					return err
				}
				f.replicas[r.Plane] = append(f.replicas[r.Plane], u)
			}
			return nil
		})
	}
	fs.DurationVar(&f.checkEvery, "health-check-every", gateway.DefaultCheckEvery, "how often each replica's "+gateway.HealthPath+" is asked (`DURATION`, 100ms–1m); a replica that refuses a connection is marked down at once")
	fs.StringVar(&f.logLevel, "log-level", "info", "debug, info, warn or error")
	fs.StringVar(&f.tlsCert, "tls-cert", "", "PEM `FILE` of the gateway's TLS certificate (chain), with --tls-key: serve HTTPS (HTTP/1.1 and HTTP/2) instead of cleartext")
	fs.StringVar(&f.tlsKey, "tls-key", "", "PEM `FILE` of the private key of --tls-cert")
	fs.StringVar(&f.a2aSkills, "a2a-skills", "", a2aFlagUsage)
	fs.StringVar(&f.a2aPublicURL, "a2a-public-url", "", a2aPublicURLUsage)
	fs.StringVar(&f.planeCA, "plane-ca", "", "PEM `FILE` of the CAs that sign the certificates of https:// replicas; the system's CAs when not given")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return errUsage
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("steward gateway: unexpected argument %q", fs.Arg(0))
	}
	return f.check()
}

func (f *gatewayFlags) check() error {
	if _, _, err := net.SplitHostPort(f.addr); err != nil {
		return fmt.Errorf("--addr: %q is not HOST:PORT: %v", f.addr, err)
	}
	for _, r := range PlaneRoutes() {
		if len(f.replicas[r.Plane]) == 0 {
			return fmt.Errorf("--%s is required: the URL of each %s plane replica, e.g. http://%s:7700", r.Plane, r.Plane, r.Plane)
		}
	}
	switch {
	case f.checkEvery < 100*time.Millisecond || f.checkEvery > time.Minute:
		return fmt.Errorf("--health-check-every: %s is outside 100ms–1m", f.checkEvery)
	case (f.tlsCert == "") != (f.tlsKey == ""):
		return errors.New("--tls-cert and --tls-key go together: the certificate and its private key")
	}
	return nil
}

// replicaURL parses one replica's base URL, refusing anything but
// http(s)://HOST:PORT.
func replicaURL(s string) (*url.URL, error) {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil ||
		(u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("%q is not a replica's URL: want http://HOST:PORT or https://HOST:PORT", s)
	}
	u.Path = ""
	return u, nil
}

func runGateway(args []string, stdout, stderr io.Writer) error {
	var f gatewayFlags
	if err := f.parse(args, stderr); err != nil {
		return err
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(f.logLevel)); err != nil {
		return fmt.Errorf("--log-level: %q is not one of debug, info, warn, error", f.logLevel)
	}
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	var roots *x509.CertPool
	if f.planeCA != "" {
		data, err := os.ReadFile(f.planeCA)
		if err != nil {
			return fmt.Errorf("--plane-ca: %w", err)
		}
		roots = x509.NewCertPool()
		if !roots.AppendCertsFromPEM(data) {
			return fmt.Errorf("--plane-ca: %s holds no PEM certificate", f.planeCA)
		}
	}
	cfg := gateway.Config{Transport: gateway.NewTransport(roots), CheckEvery: f.checkEvery, Logger: logger}
	for _, r := range PlaneRoutes() {
		cfg.Planes = append(cfg.Planes, gateway.Plane{Name: r.Plane, Services: r.Services, Replicas: f.replicas[r.Plane]})
	}
	g, err := gateway.New(cfg)
	if err != nil {
		return err
	}
	var self string // set once bound, before serving
	h, err := f.handler(g, func() string { return self }, logger)
	if err != nil {
		return err
	}
	srv, ln, err := f.listen(h)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	go g.Run(ctx)
	scheme := "http"
	if srv.TLSConfig != nil {
		scheme = "https"
	}
	self = selfURL(scheme, ln.Addr().String())
	fmt.Fprintf(stdout, "steward: gateway serving Connect, gRPC and gRPC-Web on %s://%s\n", scheme, ln.Addr())
	served := make(chan error, 1)
	go func() {
		if srv.TLSConfig != nil {
			served <- srv.ServeTLS(ln, "", "")
		} else {
			served <- srv.Serve(ln)
		}
	}()
	select {
	case err := <-served:
		return err
	case <-ctx.Done():
	}
	// Running calls (watches among them) end with the caller or the plane;
	// give them a moment, then cut them: a client reconnects.
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		_ = srv.Close()
	}
	return nil
}

// handler is what the gateway serves: the routed calls, the console
// beside them (one address for people too) and, with --a2a-skills, A2A.
func (f *gatewayFlags) handler(g *gateway.Gateway, self func() string, logger *slog.Logger) (http.Handler, error) {
	mux := http.NewServeMux()
	for _, pattern := range console.Patterns() {
		mux.Handle(pattern, console.Handler())
	}
	mux.Handle("/", g.Handler())
	if err := f.mountA2A(mux, self, logger); err != nil {
		return nil, err
	}
	if loopback(f.addr) {
		// A gateway on this machine only may front planes in the open
		// mode, which trust whoever calls: a browser's page under a
		// rebound name must not reach them through it as its own origin.
		return rpc.LoopbackOnly(mux), nil
	}
	return mux, nil
}

// listen binds --addr for h with the limits and protocols a plane's API
// has (pkg/rpc): HTTP/1.1 and HTTP/2, cleartext or, with --tls-cert, TLS.
func (f *gatewayFlags) listen(h http.Handler) (*http.Server, net.Listener, error) {
	var protocols http.Protocols
	protocols.SetHTTP1(true)
	srv := &http.Server{
		Handler:           h,
		Protocols:         &protocols,
		ReadHeaderTimeout: rpc.DefaultReadHeaderTimeout,
		ReadTimeout:       rpc.DefaultReadTimeout,
		IdleTimeout:       rpc.DefaultIdleTimeout,
		HTTP2:             &http.HTTP2Config{MaxConcurrentStreams: rpc.DefaultMaxConcurrentStreams},
	}
	if f.tlsCert != "" {
		cert, err := tls.LoadX509KeyPair(f.tlsCert, f.tlsKey)
		if err != nil {
			return nil, nil, fmt.Errorf("--tls-cert/--tls-key: %w", err)
		}
		protocols.SetHTTP2(true)
		srv.TLSConfig = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	} else {
		protocols.SetUnencryptedHTTP2(true)
	}
	ln, err := net.Listen("tcp", f.addr)
	if err != nil {
		return nil, nil, fmt.Errorf("--addr %s: %w", f.addr, err)
	}
	return srv, ln, nil
}
