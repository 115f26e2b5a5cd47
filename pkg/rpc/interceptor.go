package rpc

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"

	"connectrpc.com/connect"
	"github.com/prometheus/client_golang/prometheus"

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
	file    *TokenFile // the tokens as reloaded, when set
	parties PartiesFunc
	jwt     *JWTVerifier
	denied  *prometheus.CounterVec
	tenants TenantFunc
	streams *streamCounts
}

// EdgeOption configures the edge interceptor.
type EdgeOption func(*edgeInterceptor)

// WithJWT has bearer tokens of a JWT's shape (LooksLikeJWT) verified by v,
// beside the static tokens; with it and no tokens, calls still need a
// token.
func WithJWT(v *JWTVerifier) EdgeOption {
	return func(i *edgeInterceptor) { i.jwt = v }
}

// WithDenied counts the calls the edge denies in c (NewDeniedCounter).
func WithDenied(c *prometheus.CounterVec) EdgeOption {
	return func(i *edgeInterceptor) { i.denied = c }
}

// NewEdgeInterceptor returns the interceptor every Steward handler runs
// behind. With tokens (or a JWT verifier, WithJWT), every call must carry
// "Authorization: Bearer <token>" naming one of them or a JWT the
// verifier accepts, and the caller must be allowed by the procedure's row
// of the role table (access.Table): its roles, or, for a rule that names a
// task's parties, its part in the task, which parties looks up (nil on a
// server whose procedures need none). Without either (open mode), the
// Steward-Principal header is trusted, grants no roles, and the table is
// not applied. A call refused at the edge, unauthenticated or
// permission_denied, is logged once and counted (WithDenied).
func NewEdgeInterceptor(log *slog.Logger, tokens Tokens, parties PartiesFunc, opts ...EdgeOption) connect.Interceptor {
	i := &edgeInterceptor{log: log, tokens: tokens, parties: parties, streams: newStreamCounts()}
	for _, opt := range opts {
		opt(i)
	}
	return i
}

// open reports whether the open mode is on: nothing to check a token with.
func (i *edgeInterceptor) open() bool { return i.tokens == nil && i.jwt == nil }

func (i *edgeInterceptor) identify(ctx context.Context, procedure string, h http.Header) (context.Context, error) {
	if i.open() {
		p, err := principalFrom(h.Values(PrincipalHeader))
		if err != nil || p == "" {
			return ctx, ToConnect(ctx, i.log, err)
		}
		return WithIdentity(ctx, Identity{Principal: p}), nil
	}
	if rule, _ := access.For(procedure); rule.Public && h.Get("Authorization") == "" {
		return ctx, nil // anonymous: what it serves is public
	}
	token, ok := strings.CutPrefix(h.Get("Authorization"), "Bearer ")
	token = strings.TrimSpace(token)
	tokens := i.tokens
	if i.file != nil {
		tokens = i.file.Tokens()
	}
	if id, known := tokens[token]; ok && known {
		id.Verified = true
		return WithIdentity(ctx, id), nil
	}
	if ok && i.jwt != nil && LooksLikeJWT(token) {
		id, err := i.jwt.Verify(ctx, token)
		if err != nil {
			return ctx, connect.NewError(connect.CodeUnauthenticated, fmt.Errorf("bearer JWT refused: %w", err))
		}
		return WithIdentity(ctx, id), nil
	}
	return ctx, connect.NewError(connect.CodeUnauthenticated, errors.New("a valid bearer token is required (Authorization: Bearer <token>)"))
}

// deny logs and counts err when it refuses the call at the edge
// (unauthenticated or permission_denied), and returns it.
func (i *edgeInterceptor) deny(ctx context.Context, procedure string, err error) error {
	code := connect.CodeOf(err)
	if err == nil || code != connect.CodeUnauthenticated && code != connect.CodePermissionDenied {
		return err
	}
	reason := err.Error()
	var cerr *connect.Error
	if errors.As(err, &cerr) {
		reason = cerr.Message()
	}
	attrs := []any{"procedure", short(procedure), "code", code.String(), "reason", reason}
	if id, ok := ctx.Value(identityKey{}).(Identity); ok && id.Principal != "" {
		attrs = append(attrs, "principal", id.Principal)
	}
	i.log.WarnContext(ctx, "call denied", attrs...)
	if i.denied != nil {
		i.denied.WithLabelValues(procedure, code.String()).Inc()
	}
	return err
}

func (i *edgeInterceptor) WrapUnary(next connect.UnaryFunc) connect.UnaryFunc {
	return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
		procedure := req.Spec().Procedure
		ctx, err := i.identify(ctx, procedure, req.Header())
		if err != nil {
			return nil, i.deny(ctx, procedure, err)
		}
		if err := refusal(req.Any()); err != nil {
			return nil, err
		}
		if !i.open() {
			if err := i.sameTenant(ctx, procedure, Caller(ctx), req.Any()); err != nil {
				return nil, ToConnect(ctx, i.log, err)
			}
			if err := authorize(ctx, i.parties, procedure, Caller(ctx), req.Any()); err != nil {
				return nil, i.deny(ctx, procedure, ToConnect(ctx, i.log, err))
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
		procedure := conn.Spec().Procedure
		ctx, err := i.identify(ctx, procedure, conn.RequestHeader())
		if err != nil {
			return i.deny(ctx, procedure, err)
		}
		release, err := i.streams.take(Caller(ctx))
		if err != nil {
			return err
		}
		defer release()
		if i.open() {
			return ToConnect(ctx, i.log, next(ctx, strictConn{conn}))
		}
		who := Caller(ctx)
		if err := authorize(ctx, i.parties, procedure, who, nil); err != nil {
			return i.deny(ctx, procedure, ToConnect(ctx, i.log, err))
		}
		if check := i.streamCheck(ctx, procedure, who); check != nil {
			conn = checkedConn{StreamingHandlerConn: conn, check: check}
		}
		return ToConnect(ctx, i.log, next(ctx, strictConn{conn}))
	}
}

// streamCheck returns the check of a streamed request of procedure by
// who as it arrives, when its task is known: the task's tenant, and, when
// the roles were not enough and the rule names parties, the caller's part
// in it. nil when there is nothing to check.
func (i *edgeInterceptor) streamCheck(ctx context.Context, procedure string, who Identity) func(m any) error {
	rule, _ := access.For(procedure)
	byParty := !rule.AllowsRoles(who.Roles)
	if i.tenants == nil && !byParty {
		return nil
	}
	return func(m any) error {
		if err := i.sameTenant(ctx, procedure, who, m); err != nil {
			return ToConnect(ctx, i.log, err)
		}
		if !byParty {
			return nil
		}
		if err := authorizeParty(ctx, i.parties, procedure, rule, who, m); err != nil {
			return i.deny(ctx, procedure, ToConnect(ctx, i.log, err))
		}
		return nil
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
