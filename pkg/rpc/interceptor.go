package rpc

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strings"

	"connectrpc.com/connect"
)

// PrincipalHeader names the caller when no tokens are configured. It is
// taken on trust, carries no roles, and is recorded as the actor of the
// events a call causes.
const PrincipalHeader = "Steward-Principal"

type identityKey struct{}

// Caller returns the caller's identity: anonymous, without roles, when
// nothing named it.
func Caller(ctx context.Context) Identity {
	if id, ok := ctx.Value(identityKey{}).(Identity); ok && id.Principal != "" {
		return id
	}
	return Identity{Principal: "anonymous"}
}

// Principal returns the caller's principal, or "anonymous".
func Principal(ctx context.Context) string { return Caller(ctx).Principal }

// WithIdentity returns ctx carrying id, for in-process callers.
func WithIdentity(ctx context.Context, id Identity) context.Context {
	return context.WithValue(ctx, identityKey{}, id)
}

// edgeInterceptor authenticates the caller and translates errors, for
// unary and streaming handlers alike.
type edgeInterceptor struct {
	log    *slog.Logger
	tokens Tokens
}

// NewEdgeInterceptor returns the interceptor every Steward handler runs
// behind. With tokens, every call must carry "Authorization: Bearer
// <token>" naming one of them; without, the Steward-Principal header is
// trusted and grants no roles.
func NewEdgeInterceptor(log *slog.Logger, tokens Tokens) connect.Interceptor {
	return &edgeInterceptor{log: log, tokens: tokens}
}

func (i *edgeInterceptor) identify(ctx context.Context, h http.Header) (context.Context, error) {
	if i.tokens == nil {
		p, err := principalFrom(h.Values(PrincipalHeader))
		if err != nil || p == "" {
			return ctx, ToConnect(ctx, i.log, err)
		}
		return WithIdentity(ctx, Identity{Principal: p}), nil
	}
	token, ok := strings.CutPrefix(h.Get("Authorization"), "Bearer ")
	id, known := i.tokens[strings.TrimSpace(token)]
	if !ok || !known {
		return ctx, connect.NewError(connect.CodeUnauthenticated, errors.New("a valid bearer token is required (Authorization: Bearer <token>)"))
	}
	id.Verified = true
	return WithIdentity(ctx, id), nil
}

func (i *edgeInterceptor) WrapUnary(next connect.UnaryFunc) connect.UnaryFunc {
	return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
		ctx, err := i.identify(ctx, req.Header())
		if err != nil {
			return nil, err
		}
		if err := refusal(req.Any()); err != nil {
			return nil, err
		}
		resp, err := next(ctx, req)
		return resp, ToConnect(ctx, i.log, err)
	}
}

func (i *edgeInterceptor) WrapStreamingClient(next connect.StreamingClientFunc) connect.StreamingClientFunc {
	return next
}

func (i *edgeInterceptor) WrapStreamingHandler(next connect.StreamingHandlerFunc) connect.StreamingHandlerFunc {
	return func(ctx context.Context, conn connect.StreamingHandlerConn) error {
		ctx, err := i.identify(ctx, conn.RequestHeader())
		if err != nil {
			return err
		}
		return ToConnect(ctx, i.log, next(ctx, strictConn{conn}))
	}
}

// strictConn answers a streamed request that a strict codec refused.
type strictConn struct{ connect.StreamingHandlerConn }

func (c strictConn) Receive(m any) error {
	if err := c.StreamingHandlerConn.Receive(m); err != nil {
		return err
	}
	return refusal(m)
}
