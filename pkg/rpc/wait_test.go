package rpc_test

import (
	"context"
	"testing"
	"time"

	"github.com/steward-run/steward/pkg/rpc"
)

// TestWaitWithinLeavesTimeToAnswer bounds a wait by its own maximum, or by
// the caller's deadline less a tenth of what remains (a second at most).
func TestWaitWithinLeavesTimeToAnswer(t *testing.T) {
	for _, c := range []struct {
		name          string
		deadline, max time.Duration // deadline 0: the caller set none
		want          time.Duration
	}{
		{"no deadline", 0, 30 * time.Second, 30 * time.Second},
		{"a far deadline", time.Hour, 30 * time.Second, 30 * time.Second},
		{"a near deadline", 2 * time.Second, 30 * time.Second, 1800 * time.Millisecond},
		{"a deadline a minute off", time.Minute, 2 * time.Minute, 59 * time.Second},
	} {
		ctx := context.Background()
		if c.deadline > 0 {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, c.deadline)
			defer cancel()
		}
		before := time.Now()
		w, cancel := rpc.WaitWithin(ctx, c.max)
		after := time.Now()
		d, _ := w.Deadline()
		cancel()
		// The deadline is set between before and after.
		if d.Sub(after) > c.want || d.Sub(before) < c.want-100*time.Millisecond {
			got := d.Sub(before)
			t.Errorf("%s: the wait ends after %s, want %s", c.name, got, c.want)
		}
	}
}
