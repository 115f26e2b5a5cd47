package rpc

import (
	"context"
	"crypto/tls"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"connectrpc.com/connect"
	"connectrpc.com/grpchealth"
	"connectrpc.com/grpcreflect"

	"github.com/steward-run/steward/pkg/limits"
)

// MaxRequestBytes bounds a request message. Larger requests get
// ResourceExhausted before anything is decoded.
const MaxRequestBytes = 1 << 20

// CompressMinBytes is the smallest response that is gzip-compressed for a
// client that accepts it.
const CompressMinBytes = 64 << 10

// Service is one Connect service a plane serves.
type Service struct {
	// Name is the fully-qualified service name, e.g. "steward.v1.TaskService".
	Name    string
	Path    string
	Handler http.Handler
}

// HandlerOptions are the options every Steward handler is built with;
// tokens and parties may be nil, and edge configures the edge interceptor
// (see NewEdgeInterceptor).
func HandlerOptions(log *slog.Logger, tokens Tokens, parties PartiesFunc, edge ...EdgeOption) []connect.HandlerOption {
	return append(strictCodecs(),
		// The edge answers refused decodings and translates every error,
		// so the limits every request shares are checked inside it.
		// Innermost, the budget sees every answer as its handler built it.
		connect.WithInterceptors(NewEdgeInterceptor(log, tokens, parties, edge...), limits.NewInterceptor(), budgetInterceptor{}),
		connect.WithReadMaxBytes(MaxRequestBytes),
		connect.WithSendMaxBytes(MaxResponseBytes),
		// Compressing small messages costs more CPU than it saves bytes,
		// and most callers sit on the same network.
		connect.WithCompressMinBytes(CompressMinBytes),
		connect.WithRecover(func(ctx context.Context, spec connect.Spec, _ http.Header, r any) error {
			log.ErrorContext(ctx, "handler panicked", "procedure", spec.Procedure, "panic", r)
			return connect.NewError(connect.CodeInternal, errors.New("internal error; the server log has the details"))
		}),
	)
}

// Connection limits. A client that sends headers and then trickles or
// withholds its body, or that keeps a connection open and idle, would
// otherwise hold a connection and a goroutine for ever. Each has an Option
// that changes it.
const (
	// DefaultReadHeaderTimeout bounds reading a request's headers.
	DefaultReadHeaderTimeout = 10 * time.Second
	// DefaultReadTimeout bounds reading a request, headers and body, from
	// its first byte: a request of MaxRequestBytes at 64 KiB/s still fits.
	// It never cuts a response: over HTTP/1 the deadline is lifted once the
	// body is read, and over HTTP/2 it only ends the stream's body, so
	// WatchTask and ReplayTask stream for as long as they need. There is
	// no write timeout for the same reason.
	DefaultReadTimeout = 30 * time.Second
	// DefaultIdleTimeout closes a keep-alive connection (HTTP/1) or an
	// HTTP/2 connection with no open stream after this long without a
	// request.
	DefaultIdleTimeout = 2 * time.Minute
	// DefaultMaxConcurrentStreams bounds the streams (calls) one HTTP/2
	// connection may have open at once; a client that wants more opens
	// another connection.
	DefaultMaxConcurrentStreams = 100
)

// Server serves services over one listener with Connect, gRPC and gRPC-Web
// on HTTP/1.1 and cleartext HTTP/2 (or both over TLS, WithTLS), plus gRPC reflection, the gRPC health
// service, a plain /healthz for probes that speak only HTTP, and any plain
// HTTP handlers mounted with WithHandler (such as /metrics).
type Server struct {
	srv *http.Server
	ln  net.Listener
	tls bool
}

// Option configures a Server.
type Option func(*options)

type options struct {
	loopbackHosts     bool
	handlers          []route
	readHeaderTimeout time.Duration
	readTimeout       time.Duration
	idleTimeout       time.Duration
	maxStreams        int
	connBytes         int64
	budget            *ResponseBudget
	cert              *tls.Certificate
}

type route struct {
	pattern string
	handler http.Handler
}

// WithHandler mounts h at pattern, a net/http ServeMux pattern such as
// "GET /metrics", beside the services. It is plain HTTP: the Connect
// interceptors (authentication among them) do not run for it. A pattern
// that clashes with another one makes Listen panic, as ServeMux does.
func WithHandler(pattern string, h http.Handler) Option {
	return func(o *options) { o.handlers = append(o.handlers, route{pattern, h}) }
}

// WithLoopbackHosts answers only requests whose Host names this machine
// (localhost or a loopback address), 421 Misdirected Request otherwise: a
// web page whose name an attacker points at 127.0.0.1 (DNS rebinding)
// would reach a server listening there from a browser, as its own origin.
// It is for a server on loopback that trusts whoever calls.
func WithLoopbackHosts() Option {
	return func(o *options) { o.loopbackHosts = true }
}

// LoopbackOnly refuses a request whose Host is not this machine (421
// Misdirected Request), for a server on loopback that a browser's page
// under a rebound name must not reach as its own origin: WithLoopbackHosts
// for a plane, and the gateway in front of planes that trust whoever calls.
func LoopbackOnly(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host, _, err := net.SplitHostPort(r.Host)
		if err != nil {
			host = r.Host
		}
		host = strings.TrimSuffix(strings.ToLower(host), ".")
		if ip := net.ParseIP(strings.Trim(host, "[]")); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
			http.Error(w, "this server answers requests for localhost only (Host "+strconv.Quote(r.Host)+")", http.StatusMisdirectedRequest)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// WithTLS serves HTTPS, HTTP/1.1 and HTTP/2 over TLS 1.2 or later, with
// the certificate (chain) and key of the PEM files certFile and keyFile,
// instead of HTTP/1.1 and cleartext HTTP/2.
func WithTLS(certFile, keyFile string) (Option, error) {
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, err
	}
	return func(o *options) { o.cert = &cert }, nil
}

// WithReadHeaderTimeout replaces DefaultReadHeaderTimeout.
func WithReadHeaderTimeout(d time.Duration) Option {
	return func(o *options) { o.readHeaderTimeout = d }
}

// WithReadTimeout replaces DefaultReadTimeout.
func WithReadTimeout(d time.Duration) Option {
	return func(o *options) { o.readTimeout = d }
}

// WithIdleTimeout replaces DefaultIdleTimeout.
func WithIdleTimeout(d time.Duration) Option {
	return func(o *options) { o.idleTimeout = d }
}

// WithMaxConcurrentStreams replaces DefaultMaxConcurrentStreams.
func WithMaxConcurrentStreams(n int) Option {
	return func(o *options) { o.maxStreams = n }
}

// Listen binds addr and prepares to serve services.
func Listen(addr string, services []Service, opts ...Option) (*Server, error) {
	o := options{
		readHeaderTimeout: DefaultReadHeaderTimeout,
		readTimeout:       DefaultReadTimeout,
		idleTimeout:       DefaultIdleTimeout,
		maxStreams:        DefaultMaxConcurrentStreams,
		connBytes:         DefaultConnResponseBytes,
	}
	for _, opt := range opts {
		opt(&o)
	}
	if o.budget == nil {
		o.budget = NewResponseBudget(DefaultServerResponseBytes)
	}
	mux := http.NewServeMux()
	names := make([]string, 0, len(services))
	for _, s := range services {
		mux.Handle(s.Path, releaseAfterWrite(checkGet(s.Handler)))
		names = append(names, s.Name)
	}
	reflector := grpcreflect.NewStaticReflector(names...)
	mux.Handle(grpcreflect.NewHandlerV1(reflector))
	mux.Handle(grpcreflect.NewHandlerV1Alpha(reflector))
	mux.Handle(grpchealth.NewHandler(grpchealth.NewStaticChecker(names...)))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok\n")) })
	for _, r := range o.handlers {
		mux.Handle(r.pattern, r.handler)
	}

	var handler http.Handler = mux
	if o.loopbackHosts {
		handler = LoopbackOnly(mux)
	}
	var protocols http.Protocols
	protocols.SetHTTP1(true)
	var tlsConfig *tls.Config
	if o.cert != nil {
		protocols.SetHTTP2(true)
		tlsConfig = &tls.Config{Certificates: []tls.Certificate{*o.cert}, MinVersion: tls.VersionTLS12}
	} else {
		protocols.SetUnencryptedHTTP2(true)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	return &Server{
		ln:  ln,
		tls: tlsConfig != nil,
		srv: &http.Server{
			TLSConfig:         tlsConfig,
			Handler:           handler,
			Protocols:         &protocols,
			ReadHeaderTimeout: o.readHeaderTimeout,
			ReadTimeout:       o.readTimeout,
			IdleTimeout:       o.idleTimeout,
			HTTP2:             &http.HTTP2Config{MaxConcurrentStreams: o.maxStreams},
			ConnContext:       withConnBudget(o.connBytes, o.budget),
		},
	}, nil
}

// Addr returns the bound address, with the real port when ":0" was asked.
func (s *Server) Addr() string { return s.ln.Addr().String() }

// URL returns the server's base URL: https:// with TLS (WithTLS), else
// http://.
func (s *Server) URL() string {
	if s.tls {
		return "https://" + s.Addr()
	}
	return "http://" + s.Addr()
}

// Serve serves until Shutdown; it returns nil after a clean shutdown.
func (s *Server) Serve() error {
	serve := s.srv.Serve
	if s.tls {
		serve = func(ln net.Listener) error { return s.srv.ServeTLS(ln, "", "") }
	}
	if err := serve(s.ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// Shutdown stops accepting calls and waits for running ones until ctx ends;
// then it closes what is left. Planes end their long-lived streams (watches)
// themselves when they stop, which should come first.
func (s *Server) Shutdown(ctx context.Context) error {
	err := s.srv.Shutdown(ctx)
	if err != nil {
		_ = s.srv.Close()
	}
	return err
}
