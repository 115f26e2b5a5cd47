package a2a

import (
	"context"
	"errors"
	"net/http"

	"connectrpc.com/connect"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
)

// forwarded are the headers that say who calls: the handler presents them
// to the API unchanged, and nothing else of the request.
func forwarded() [2]string { return [2]string{"Authorization", "Steward-Principal"} }

// forward is a client interceptor presenting the A2A caller's credentials
// on every Connect call made for it.
type forward http.Header

func (f forward) set(h http.Header) {
	for _, name := range forwarded() {
		// Every value as sent: the API refuses a principal named twice,
		// and must see it named twice to.
		h.Del(name)
		for _, v := range http.Header(f).Values(name) {
			h.Add(name, v)
		}
	}
}

func (f forward) WrapUnary(next connect.UnaryFunc) connect.UnaryFunc {
	return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
		f.set(req.Header())
		return next(ctx, req)
	}
}

func (f forward) WrapStreamingClient(next connect.StreamingClientFunc) connect.StreamingClientFunc {
	return func(ctx context.Context, spec connect.Spec) connect.StreamingClientConn {
		conn := next(ctx, spec)
		f.set(conn.RequestHeader())
		return conn
	}
}

func (forward) WrapStreamingHandler(next connect.StreamingHandlerFunc) connect.StreamingHandlerFunc {
	return next
}

// fromConnect is the A2A error for an error of the API, which has already
// said why in words fit for the caller: not found (another tenant's task
// too) is TaskNotFound, bad input InvalidParams naming the field, and a
// caller the API did not authenticate an HTTP 401.
func fromConnect(err error) *rpcError {
	var rerr *rpcError
	if errors.As(err, &rerr) {
		return rerr
	}
	msg := err.Error()
	var cerr *connect.Error
	if errors.As(err, &cerr) {
		msg = cerr.Message()
	}
	switch connect.CodeOf(err) {
	case connect.CodeNotFound:
		return &rpcError{Code: codeTaskNotFound, Message: msg}
	case connect.CodeInvalidArgument:
		field := badField(cerr)
		return &rpcError{Code: codeInvalidParams, Message: msg, Data: map[string]any{"field": field}}
	case connect.CodeUnauthenticated:
		return &rpcError{Code: codeServerError, Message: "unauthenticated: " + msg, status: http.StatusUnauthorized}
	case connect.CodePermissionDenied, connect.CodeFailedPrecondition, connect.CodeResourceExhausted, connect.CodeAlreadyExists, connect.CodeAborted:
		return &rpcError{Code: codeServerError, Message: connect.CodeOf(err).String() + ": " + msg}
	}
	return &rpcError{Code: codeInternal, Message: msg}
}

// badField is the field a Connect InvalidArgument names, as Steward's
// errs.Field sends it (a BadRequest detail).
func badField(cerr *connect.Error) string {
	if cerr == nil {
		return ""
	}
	for _, d := range cerr.Details() {
		if v, err := d.Value(); err == nil {
			if br, ok := v.(*errdetails.BadRequest); ok && len(br.FieldViolations) > 0 {
				return br.FieldViolations[0].Field
			}
		}
	}
	return ""
}
