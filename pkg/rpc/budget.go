package rpc

import (
	"context"
	"net"
	"net/http"
	"sync"

	"golang.org/x/sync/semaphore"
)

// MaxResponseBytes bounds one response message, as encoded: a larger one
// is not sent, and the caller gets ResourceExhausted (Connect's send
// limit, set on every handler by HandlerOptions). Lists end a page early
// well below it (state.MaxPageBytes); GetTask refuses a task past it.
const MaxResponseBytes = 8 << 20

// DefaultConnResponseBytes bounds the response bytes one connection may
// have in flight: built and not yet read by its client. A client that
// stops reading (or an HTTP/2 client that opens no flow-control window)
// holds what it was sent; a handler that would build more on the same
// connection waits until the client reads, or leaves. Handlers that
// answer with many bytes reserve them first (Reserve), counting each
// answer twice: its message and its encoding are both in memory until the
// client reads.
const DefaultConnResponseBytes = 8 << 20

// WithConnResponseBytes replaces DefaultConnResponseBytes.
func WithConnResponseBytes(n int64) Option {
	return func(o *options) { o.connBytes = n }
}

// connBudget is one connection's budget of response bytes in flight;
// safe for concurrent use by the connection's streams.
type connBudget struct {
	sem  *semaphore.Weighted
	size int64
}

// held is what one request has reserved of its connection's budget,
// given back when its handler has written the response.
type held struct {
	mu sync.Mutex
	b  *connBudget
	n  int64
}

type budgetKey struct{}
type heldKey struct{}

// withConnBudget gives each connection a budget of size bytes.
func withConnBudget(size int64) func(context.Context, net.Conn) context.Context {
	return func(ctx context.Context, _ net.Conn) context.Context {
		return context.WithValue(ctx, budgetKey{}, &connBudget{sem: semaphore.NewWeighted(size), size: size})
	}
}

// releaseAfterWrite gives back what a request reserved once its handler
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
	if h.n > 0 {
		h.b.sem.Release(h.n)
		h.n = 0
	}
}

// Reserve takes 2n bytes of the calling connection's budget of response
// bytes in flight (DefaultConnResponseBytes) before a handler builds a
// response of up to n bytes (protobuf size), waiting while the connection's earlier
// responses are still unread; they are given back when the handler's
// response is written. It returns a function that gives back what the
// response turned out not to need (call it with the bytes it does need).
// It fails only when ctx ends (the caller left). Outside a Server (a
// handler called in-process) it reserves nothing. Safe for concurrent use.
func Reserve(ctx context.Context, n int) (shrink func(used int), err error) {
	h, ok := ctx.Value(heldKey{}).(*held)
	if !ok || n <= 0 {
		return func(int) {}, nil
	}
	want := min(2*int64(n), h.b.size)
	if err := h.b.sem.Acquire(ctx, want); err != nil {
		return nil, err
	}
	h.mu.Lock()
	h.n += want
	h.mu.Unlock()
	return func(used int) {
		h.mu.Lock()
		defer h.mu.Unlock()
		if back := min(want-2*int64(used), h.n); back > 0 {
			h.b.sem.Release(back)
			h.n -= back
		}
	}, nil
}
