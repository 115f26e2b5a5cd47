package timer

import "time"

// For the external tests.
var (
	IDToken = idToken
	Matches = matches
)

// WithSweepEvery sets how often Run moves timers out of the shared stream
// again.
func WithSweepEvery(c Config, d time.Duration) Config {
	c.sweepEvery = d
	return c
}
