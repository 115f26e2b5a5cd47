package rpc

import (
	"context"
	"log/slog"
	"strings"

	"connectrpc.com/connect"
)

// PrincipalHeader names the caller. Until authentication lands it is taken
// on trust and recorded as the actor of the events a call causes.
const PrincipalHeader = "Steward-Principal"

type principalKey struct{}

// Principal returns the caller's principal, or "anonymous".
func Principal(ctx context.Context) string {
	if p, ok := ctx.Value(principalKey{}).(string); ok && p != "" {
		return p
	}
	return "anonymous"
}

// WithPrincipal returns ctx carrying principal p, for in-process callers.
func WithPrincipal(ctx context.Context, p string) context.Context {
	return context.WithValue(ctx, principalKey{}, p)
}

// edgeInterceptor attaches the principal and translates errors, for unary
// and streaming handlers alike.
type edgeInterceptor struct{ log *slog.Logger }

// NewEdgeInterceptor returns the interceptor every Steward handler runs
// behind.
func NewEdgeInterceptor(log *slog.Logger) connect.Interceptor { return &edgeInterceptor{log: log} }

func (i *edgeInterceptor) WrapUnary(next connect.UnaryFunc) connect.UnaryFunc {
	return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
		ctx = withPrincipalFrom(ctx, req.Header().Get(PrincipalHeader))
		resp, err := next(ctx, req)
		return resp, ToConnect(ctx, i.log, err)
	}
}

func (i *edgeInterceptor) WrapStreamingClient(next connect.StreamingClientFunc) connect.StreamingClientFunc {
	return next
}

func (i *edgeInterceptor) WrapStreamingHandler(next connect.StreamingHandlerFunc) connect.StreamingHandlerFunc {
	return func(ctx context.Context, conn connect.StreamingHandlerConn) error {
		ctx = withPrincipalFrom(ctx, conn.RequestHeader().Get(PrincipalHeader))
		return ToConnect(ctx, i.log, next(ctx, conn))
	}
}

func withPrincipalFrom(ctx context.Context, p string) context.Context {
	p = strings.TrimSpace(p)
	if p == "" || len(p) > 256 {
		return ctx
	}
	return WithPrincipal(ctx, p)
}
