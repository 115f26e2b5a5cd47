package rpc

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strings"

	"connectrpc.com/connect"

	"github.com/steward-run/steward/pkg/access"
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
	log     *slog.Logger
	tokens  Tokens
	parties PartiesFunc
}

// NewEdgeInterceptor returns the interceptor every Steward handler runs
// behind. With tokens, every call must carry "Authorization: Bearer
// <token>" naming one of them, and the caller must be allowed by the
// procedure's row of the role table (access.Table): its roles, or, for a
// rule that names a task's parties, its part in the task, which parties
// looks up (nil on a server whose procedures need none). Without tokens
// (open mode), the Steward-Principal header is trusted, grants no roles,
// and the table is not applied.
func NewEdgeInterceptor(log *slog.Logger, tokens Tokens, parties PartiesFunc) connect.Interceptor {
	return &edgeInterceptor{log: log, tokens: tokens, parties: parties}
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
		if i.tokens != nil {
			if err := authorize(ctx, i.parties, req.Spec().Procedure, Caller(ctx), req.Any()); err != nil {
				return nil, ToConnect(ctx, i.log, err)
			}
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
		if i.tokens == nil {
			return ToConnect(ctx, i.log, next(ctx, strictConn{conn}))
		}
		who := Caller(ctx)
		procedure := conn.Spec().Procedure
		if err := authorize(ctx, i.parties, procedure, who, nil); err != nil {
			return ToConnect(ctx, i.log, err)
		}
		if rule, _ := access.For(procedure); !rule.AllowsRoles(who.Roles) {
			// The roles were not enough, and the rule names parties: the
			// request's task decides, as it arrives.
			conn = partyConn{StreamingHandlerConn: conn, ctx: ctx, parties: i.parties, who: who}
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
