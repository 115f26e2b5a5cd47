package rpc

import (
	"context"
	"net"
	"net/http"
	"sync"
	"sync/atomic"

	"connectrpc.com/connect"
	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sync/semaphore"
	"google.golang.org/protobuf/proto"
)

// MaxResponseBytes bounds one response message, as encoded: a larger one
// is not sent, and the caller gets ResourceExhausted (Connect's send
// limit, set on every handler by HandlerOptions). Lists end a page early
// well below it (MaxPageBytes); GetTask refuses a task past it, and a
// change to such a task is answered with its summary.
const MaxResponseBytes = 8 << 20

// DefaultConnResponseBytes bounds the response bytes one connection may
// have in flight: built and not yet read by its client. A client that
// stops reading (or an HTTP/2 client that opens no flow-control window)
// holds what it was sent; an answer that would pass the bound on the same
// connection waits until the client reads, or leaves. Every answer counts
// twice its protobuf size: its message and its encoding are both in
// memory until the client reads.
const DefaultConnResponseBytes = 8 << 20

// DefaultServerResponseBytes bounds the response bytes all connections
// together may have in flight, as DefaultConnResponseBytes does one
// connection's: eight stalled connections hold it all, and the others'
// answers wait until one of them reads or leaves.
const DefaultServerResponseBytes = 64 << 20

// WithConnResponseBytes replaces DefaultConnResponseBytes.
func WithConnResponseBytes(n int64) Option {
	return func(o *options) { o.connBytes = n }
}

// WithResponseBudget has the server take its answers' bytes of b, the
// budget of all its connections, instead of one of
// DefaultServerResponseBytes.
func WithResponseBudget(b *ResponseBudget) Option {
	return func(o *options) { o.budget = b }
}

// ResponseBudget is a server's budget of response bytes in flight, over
// all its connections; it is a prometheus.Collector of how much is held
// and how many answers wait. Safe for concurrent use.
type ResponseBudget struct {
	pool
	waiting atomic.Int64
	held    *prometheus.Desc
	waits   *prometheus.Desc
}

// NewResponseBudget returns a budget of size bytes.
func NewResponseBudget(size int64) *ResponseBudget {
	return &ResponseBudget{
		pool:  pool{sem: semaphore.NewWeighted(size), size: size},
		held:  prometheus.NewDesc("steward_rpc_response_bytes_held", "Response bytes reserved by answers built and not yet written to their clients (twice each answer's protobuf size).", nil, nil),
		waits: prometheus.NewDesc("steward_rpc_responses_waiting", "Calls waiting for response bytes of their connection's or the server's budget: to run their handler, or with their answer built.", nil, nil),
	}
}

// Describe implements prometheus.Collector.
func (b *ResponseBudget) Describe(ch chan<- *prometheus.Desc) { ch <- b.held; ch <- b.waits }

// Collect implements prometheus.Collector.
func (b *ResponseBudget) Collect(ch chan<- prometheus.Metric) {
	ch <- prometheus.MustNewConstMetric(b.held, prometheus.GaugeValue, float64(b.used.Load()))
	ch <- prometheus.MustNewConstMetric(b.waits, prometheus.GaugeValue, float64(b.waiting.Load()))
}

// pool is a semaphore of bytes and what of it is taken.
type pool struct {
	sem  *semaphore.Weighted
	size int64
	used atomic.Int64
}

func (p *pool) acquire(ctx context.Context, n int64) error {
	if err := p.sem.Acquire(ctx, n); err != nil {
		return err
	}
	p.used.Add(n)
	return nil
}

func (p *pool) release(n int64) {
	p.used.Add(-n)
	p.sem.Release(n)
}

// connBudget is one connection's budget and the server's; safe for
// concurrent use by the connection's streams.
type connBudget struct {
	conn   pool
	server *ResponseBudget
}

// take reserves twice n bytes of both budgets (no more than either
// holds, so that any answer can go out alone): the connection's first, so
// that a stalled connection's waiting answers hold none of the server's.
func (c *connBudget) take(ctx context.Context, n int) (int64, error) {
	want := min(2*int64(n), c.conn.size, c.server.size)
	if want <= 0 {
		return 0, nil
	}
	c.server.waiting.Add(1)
	defer c.server.waiting.Add(-1)
	if err := c.conn.acquire(ctx, want); err != nil {
		return 0, err
	}
	if err := c.server.acquire(ctx, want); err != nil {
		c.conn.release(want)
		return 0, err
	}
	return want, nil
}

// builders is how many calls of one connection may run their handlers at
// once: each holds this share of the connection's budget until its
// answer is built and reserved, so that a stalled connection's later
// calls wait before they build anything (the semaphore is first come,
// first served), not with their answers built.
const builders = 8

// admit takes a builder's share of the connection's budget, waiting while
// earlier calls hold it.
func (c *connBudget) admit(ctx context.Context) (int64, error) {
	share := c.conn.size / builders
	c.server.waiting.Add(1)
	defer c.server.waiting.Add(-1)
	if err := c.conn.acquire(ctx, share); err != nil {
		return 0, err
	}
	return share, nil
}

func (c *connBudget) give(n int64) {
	if n > 0 {
		c.server.release(n)
		c.conn.release(n)
	}
}

// held is what one call has reserved, given back once its handler has
// written the response.
type held struct {
	mu sync.Mutex
	b  *connBudget
	n  int64
}

type budgetKey struct{}
type heldKey struct{}

// withConnBudget gives each connection a budget of size bytes, within
// server's.
func withConnBudget(size int64, server *ResponseBudget) func(context.Context, net.Conn) context.Context {
	return func(ctx context.Context, _ net.Conn) context.Context {
		return context.WithValue(ctx, budgetKey{}, &connBudget{conn: pool{sem: semaphore.NewWeighted(size), size: size}, server: server})
	}
}

// releaseAfterWrite gives back what a call reserved once its handler
// returns: by then its response is written out to the connection (HTTP/2
// hands a stream's data to the connection in small chunks, as the
// client's window allows, so a handler returns only when the client has
// taken nearly all of it).
func releaseAfterWrite(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, ok := r.Context().Value(budgetKey{}).(*connBudget)
		if !ok {
			next.ServeHTTP(w, r)
			return
		}
		h := &held{b: b}
		defer h.release()
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), heldKey{}, h)))
	})
}

func (h *held) release() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.b.give(h.n)
	h.n = 0
}

// reserve takes twice n bytes (n a response's protobuf size) of the
// calling connection's budget and the server's, waiting while earlier
// answers are unread; they are given back when the call's response is
// written. It fails only when ctx ends (the caller left). Outside a
// Server (a handler called in-process) it reserves nothing.
func reserve(ctx context.Context, n int) error {
	h, ok := ctx.Value(heldKey{}).(*held)
	if !ok {
		return nil
	}
	got, err := h.b.take(ctx, n)
	if err != nil {
		return err
	}
	h.mu.Lock()
	h.n += got
	h.mu.Unlock()
	return nil
}

// budgetInterceptor reserves every answer's bytes before it is encoded,
// in one place for every procedure: a unary answer's until the call's
// response is written, a stream's message's until it is sent. A unary
// handler runs only once admitted (admit).
type budgetInterceptor struct{}

func (budgetInterceptor) WrapUnary(next connect.UnaryFunc) connect.UnaryFunc {
	return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
		h, ok := ctx.Value(heldKey{}).(*held)
		if !ok {
			return next(ctx, req)
		}
		share, err := h.b.admit(ctx)
		if err != nil {
			return nil, err
		}
		resp, err := next(ctx, req)
		h.b.conn.release(share)
		if err != nil || resp == nil {
			return resp, err
		}
		if m, ok := resp.Any().(proto.Message); ok {
			lighten(req, m)
		}
		if err := reserve(ctx, messageSize(resp.Any())); err != nil {
			return nil, err
		}
		return resp, nil
	}
}

func (budgetInterceptor) WrapStreamingClient(next connect.StreamingClientFunc) connect.StreamingClientFunc {
	return next
}

func (budgetInterceptor) WrapStreamingHandler(next connect.StreamingHandlerFunc) connect.StreamingHandlerFunc {
	return func(ctx context.Context, conn connect.StreamingHandlerConn) error {
		h, ok := ctx.Value(heldKey{}).(*held)
		if !ok {
			return next(ctx, conn)
		}
		return next(ctx, &budgetedStream{StreamingHandlerConn: conn, ctx: ctx, b: h.b})
	}
}

// budgetedStream reserves each message's bytes before sending it and
// gives them back once it is sent.
type budgetedStream struct {
	connect.StreamingHandlerConn
	ctx context.Context
	b   *connBudget
}

func (s *budgetedStream) Send(m any) error {
	got, err := s.b.take(s.ctx, messageSize(m))
	if err != nil {
		return err
	}
	defer s.b.give(got)
	return s.StreamingHandlerConn.Send(m)
}

func messageSize(m any) int {
	if pm, ok := m.(proto.Message); ok {
		return proto.Size(pm)
	}
	return 0
}

// Held returns the bytes reserved now, of all connections.
func (b *ResponseBudget) Held() int64 { return b.used.Load() }

// Waiting returns how many answers wait for bytes now.
func (b *ResponseBudget) Waiting() int64 { return b.waiting.Load() }
