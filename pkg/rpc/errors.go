// Package rpc is Steward's Connect edge, shared by every plane: the one
// table that turns domain errors into Connect codes, the interceptors that
// every handler runs behind (recover, error translation, the caller's
// identity from a token file or a JWT, the role table, denied calls logged
// and counted), and the HTTP server that serves Connect, gRPC and gRPC-Web
// over h2c or TLS with gRPC reflection and health checks.
package rpc

import (
	"context"
	"errors"
	"log/slog"

	"connectrpc.com/connect"
	"google.golang.org/genproto/googleapis/rpc/errdetails"

	"github.com/steward-run/steward/pkg/errs"
)

// connectCodes is the single translation table from domain codes to
// Connect codes.
var connectCodes = map[errs.Code]connect.Code{
	errs.Invalid:            connect.CodeInvalidArgument,
	errs.NotFound:           connect.CodeNotFound,
	errs.AlreadyExists:      connect.CodeAlreadyExists,
	errs.FailedPrecondition: connect.CodeFailedPrecondition,
	errs.Conflict:           connect.CodeAborted,
	errs.TooLarge:           connect.CodeResourceExhausted,
	errs.Unavailable:        connect.CodeUnavailable,
	errs.Corrupt:            connect.CodeDataLoss,
	errs.PermissionDenied:   connect.CodePermissionDenied,
	errs.QuotaExceeded:      connect.CodeResourceExhausted,
}

// ToConnect translates err for a client. Domain errors keep their message
// (and, for invalid input, a BadRequest detail naming the field), except
// Unavailable, whose cause is logged and replaced by a generic message;
// anything else is logged in full and reported as Internal without
// internals.
func ToConnect(ctx context.Context, log *slog.Logger, err error) error {
	if err == nil {
		return nil
	}
	var cerr *connect.Error
	if errors.As(err, &cerr) {
		return err // already a Connect error, e.g. from the framework
	}
	// The caller's own context says whether the caller gave up; a
	// deadline inside the chain is Steward's own timeout on the bus, which
	// the caller can only retry.
	switch {
	case errors.Is(ctx.Err(), context.Canceled):
		return connect.NewError(connect.CodeCanceled, ctx.Err())
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return connect.NewError(connect.CodeDeadlineExceeded, ctx.Err())
	}
	code, ok := connectCodes[errs.CodeOf(err)]
	if !ok && (errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled)) {
		code, ok = connect.CodeUnavailable, true
	}
	if !ok {
		log.ErrorContext(ctx, "internal error", "err", err)
		return connect.NewError(connect.CodeInternal, errors.New("internal error; the server log has the details"))
	}
	if code == connect.CodeUnavailable {
		// The cause is the bus's own wording; it stays in the log.
		log.WarnContext(ctx, "unavailable", "err", err)
		return connect.NewError(code, errors.New("the event log is unavailable; try again"))
	}
	out := connect.NewError(code, err)
	var e *errs.Error
	if errors.As(err, &e) && e.Field != "" {
		detail, derr := connect.NewErrorDetail(&errdetails.BadRequest{
			FieldViolations: []*errdetails.BadRequest_FieldViolation{{Field: e.Field, Description: e.Message}},
		})
		if derr == nil {
			out.AddDetail(detail)
		}
	}
	return out
}
