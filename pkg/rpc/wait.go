package rpc

import (
	"context"
	"time"
)

// WaitWithin returns the context of a wait inside a call whose context is
// ctx (GetAction or ProposeAction with wait): it ends after max, or sooner
// when the caller's deadline is nearer, leaving a tenth of what remains,
// at most a second, to answer in. A wait cut short by the caller's
// deadline is thus answered, with what it has, instead of failing.
func WaitWithin(ctx context.Context, max time.Duration) (context.Context, context.CancelFunc) {
	if d, ok := ctx.Deadline(); ok {
		left := time.Until(d)
		max = min(max, left-min(left/10, time.Second))
	}
	return context.WithTimeout(ctx, max)
}
