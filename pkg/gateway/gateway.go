// Package gateway is one address in front of the planes of a services-mode
// deployment (`steward gateway`): it sends each Connect, gRPC or gRPC-Web
// call, by the service in its path (/<package.Service>/<Method>), to a
// healthy replica of the plane that serves that service.
//
// It exists so that a client needs one address, while the planes stay
// unaware of each other. It authenticates nobody and asserts nothing: the
// caller's own Authorization header goes through unchanged and the plane
// checks it exactly as if called directly, so there is no identity between
// processes that a caller could forge. It adds no header, and drops the
// hop-by-hop ones and X-Forwarded-*/Forwarded, as net/http/httputil's
// ReverseProxy does with Rewrite.
package gateway

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"time"

	"connectrpc.com/connect"
	"connectrpc.com/grpchealth"
	"connectrpc.com/grpcreflect"
)

// DefaultCheckEvery is how often each replica's health is checked.
const DefaultCheckEvery = 2 * time.Second

// HealthPath is what the gateway asks of a replica to know it is up: a
// plane listens only once it has started (the state plane once its views
// have caught up with the log), and stops listening as it shuts down.
const HealthPath = "/healthz"

// Plane is one plane behind the gateway.
type Plane struct {
	// Name is the plane's name, as in `steward serve --plane`.
	Name string
	// Services are the fully-qualified names of the services it serves,
	// e.g. "steward.v1.TaskService".
	Services []string
	// Replicas are the base URLs of its replicas, http:// (cleartext
	// HTTP/2) or https://.
	Replicas []*url.URL
}

// Config configures a Gateway.
type Config struct {
	Planes []Plane
	// Transport carries calls and health checks to the replicas; it must
	// speak HTTP/2 to them (gRPC needs it). NewTransport makes one.
	Transport http.RoundTripper
	// CheckEvery is how often replicas are checked; DefaultCheckEvery
	// when zero.
	CheckEvery time.Duration
	// LookupHost finds the addresses of a replica URL's host name, as
	// net.DefaultResolver.LookupHost does (the default).
	LookupHost func(ctx context.Context, host string) ([]string, error)
	Logger     *slog.Logger
}

// Gateway routes calls to the planes. Its Handler is safe for concurrent
// use; Run checks the replicas' health until its context ends.
type Gateway struct {
	cfg       Config
	byService map[string]*plane
	planes    []*plane
	services  []string
	proxy     *httputil.ReverseProxy
	errors    *connect.ErrorWriter
}

// New returns a gateway for cfg's planes. A service served by two planes,
// or a plane without replicas, is refused.
func New(cfg Config) (*Gateway, error) {
	if cfg.CheckEvery <= 0 {
		cfg.CheckEvery = DefaultCheckEvery
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.LookupHost == nil {
		cfg.LookupHost = net.DefaultResolver.LookupHost
	}
	if cfg.Transport == nil {
		cfg.Transport = NewTransport(nil)
	}
	g := &Gateway{cfg: cfg, byService: map[string]*plane{}, errors: connect.NewErrorWriter()}
	for _, p := range cfg.Planes {
		if len(p.Replicas) == 0 {
			return nil, fmt.Errorf("the %s plane has no replica", p.Name)
		}
		pl := newPlane(p)
		g.planes = append(g.planes, pl)
		for _, s := range p.Services {
			if other := g.byService[s]; other != nil {
				return nil, fmt.Errorf("%s is served by the %s and the %s plane", s, other.name, p.Name)
			}
			g.byService[s] = pl
			g.services = append(g.services, s)
		}
	}
	g.proxy = &httputil.ReverseProxy{
		// Rewrite (not Director) has the proxy drop X-Forwarded-* and
		// Forwarded from the caller; the replica is chosen per attempt,
		// in the transport.
		Rewrite:       func(r *httputil.ProxyRequest) { r.Out.Host = "" },
		Transport:     &failover{transport: cfg.Transport, g: g},
		FlushInterval: -1, // a watch's messages as they come
		ErrorHandler:  g.proxyError,
		ErrorLog:      slog.NewLogLogger(cfg.Logger.Handler(), slog.LevelDebug),
	}
	return g, nil
}

// Handler serves the routed services, gRPC reflection of them (from the
// descriptors compiled into this binary), gRPC health (a service serving
// while its plane has a healthy replica, "" while every plane has one),
// GET /healthz (the gateway is up) and GET /readyz (every plane has a
// healthy replica).
func (g *Gateway) Handler() http.Handler {
	mux := http.NewServeMux()
	reflector := grpcreflect.NewStaticReflector(g.services...)
	mux.Handle(grpcreflect.NewHandlerV1(reflector))
	mux.Handle(grpcreflect.NewHandlerV1Alpha(reflector))
	mux.Handle(grpchealth.NewHandler(health{g}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok\n")) })
	mux.HandleFunc("GET /readyz", g.readyz)
	mux.Handle("/", http.HandlerFunc(g.route))
	return mux
}

// route sends r to the plane that serves its service. A call asking to
// upgrade its connection is refused: Connect, gRPC and gRPC-Web never do,
// and the HTTP/2 connection to a plane cannot carry one.
func (g *Gateway) route(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("Upgrade") != "" {
		_ = g.errors.Write(w, r, connect.NewError(connect.CodeInvalidArgument,
			fmt.Errorf("the gateway does not upgrade connections (Upgrade: %q): Steward speaks Connect, gRPC and gRPC-Web", r.Header.Get("Upgrade"))))
		return
	}
	service, _, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
	p := g.byService[service]
	if p == nil {
		_ = g.errors.Write(w, r, connect.NewError(connect.CodeNotFound,
			fmt.Errorf("no Steward service at %q: a call's path is /<package.Service>/<Method>, e.g. /steward.v1.TaskService/CreateTask", r.URL.Path)))
		return
	}
	g.proxy.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), planeKey{}, p)))
}

// proxyError answers a call no replica took, in the caller's protocol.
func (g *Gateway) proxyError(w http.ResponseWriter, r *http.Request, err error) {
	if errors.Is(err, context.Canceled) && r.Context().Err() != nil {
		return // the caller left
	}
	g.cfg.Logger.Warn("gateway: call not delivered", "path", r.URL.Path, "error", err)
	var bad *badBody
	if errors.As(err, &bad) {
		_ = g.errors.Write(w, r, connect.NewError(connect.CodeInvalidArgument, bad))
		return
	}
	msg := "the gateway could not deliver the call"
	var u *undelivered
	if errors.As(err, &u) {
		msg = u.caller()
	}
	_ = g.errors.Write(w, r, connect.NewError(connect.CodeUnavailable, errors.New(msg+" (the gateway's log has the details)")))
}

// Ready reports whether every plane has a healthy replica.
func (g *Gateway) Ready() bool {
	for _, p := range g.planes {
		if p.healthy() == 0 {
			return false
		}
	}
	return true
}

// readyz answers 200 while every plane has a healthy replica, 503
// otherwise, with each plane's count either way: replicas' addresses and
// errors are the gateway's log's, not any caller's.
func (g *Gateway) readyz(w http.ResponseWriter, _ *http.Request) {
	var b strings.Builder
	for _, p := range g.planes {
		fmt.Fprintf(&b, "%s: %d of %d replicas healthy\n", p.name, p.healthy(), len(p.current()))
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	if !g.Ready() {
		w.WriteHeader(http.StatusServiceUnavailable)
	}
	_, _ = w.Write([]byte(b.String()))
}

// health is gRPC health over the replicas' health.
type health struct{ g *Gateway }

func (h health) Check(_ context.Context, req *grpchealth.CheckRequest) (*grpchealth.CheckResponse, error) {
	up := h.g.Ready()
	if req.Service != "" {
		p := h.g.byService[req.Service]
		if p == nil {
			return nil, connect.NewError(connect.CodeNotFound, fmt.Errorf("no Steward service %q", req.Service))
		}
		up = p.healthy() > 0
	}
	if up {
		return &grpchealth.CheckResponse{Status: grpchealth.StatusServing}, nil
	}
	return &grpchealth.CheckResponse{Status: grpchealth.StatusNotServing}, nil
}

// planeKey carries the plane a call goes to, from route to the transport.
type planeKey struct{}
