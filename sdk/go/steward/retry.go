package steward

import (
	"context"
	"time"

	"connectrpc.com/connect"
)

// Retry says how a call that may not have been answered is sent again.
type Retry struct {
	// Attempts is how many times a call is sent at most (1: never again).
	Attempts int
	// First is the wait before the second attempt; each wait after
	// doubles, up to Max.
	First, Max time.Duration
}

// DefaultRetry sends a call up to five times, waiting 100 ms, then 200,
// 400 and 800 ms.
var DefaultRetry = Retry{Attempts: 5, First: 100 * time.Millisecond, Max: 5 * time.Second}

// call sends req through fn, again while the answer may not have come —
// the same request, ids and all — and returns the answer's message or an
// *Error.
func call[Req, Res any](ctx context.Context, r Retry, fn func(context.Context, *connect.Request[Req]) (*connect.Response[Res], error), req *Req) (*Res, error) {
	wait := r.First
	for attempt := 1; ; attempt++ {
		resp, err := fn(ctx, connect.NewRequest(req))
		if err == nil {
			return resp.Msg, nil
		}
		if attempt >= r.Attempts || !retryable(ctx, err) {
			return nil, asError(err)
		}
		select {
		case <-ctx.Done():
			return nil, asError(err)
		case <-time.After(wait):
		}
		wait = min(2*wait, r.Max)
	}
}

// unanswered reports whether err leaves it open whether Steward did the
// command: it was unreachable, or did not answer in time, or the
// connection broke — while the caller still waits.
func unanswered(ctx context.Context, err error) bool {
	if ctx.Err() != nil {
		return false
	}
	// connect-go reports a transport failure (a refused or reset
	// connection, a response cut off) as Unavailable.
	c := connect.CodeOf(err)
	return c == connect.CodeUnavailable || c == connect.CodeDeadlineExceeded
}

// retryable reports whether err is worth another attempt of the same
// call: unanswered, or refused as Aborted — Steward did nothing and says
// to try again (a task changing too fast for its own retries; a watch that
// fell behind). Every call the client retries carries its ids, so another
// attempt is the same command.
func retryable(ctx context.Context, err error) bool {
	return unanswered(ctx, err) || ctx.Err() == nil && connect.CodeOf(err) == connect.CodeAborted
}
