package breaker

import (
	"fmt"
	"math"
	"time"
)

// The defaults WithDefaults fills in for zero fields.
const (
	DefaultWindow         = 30 * time.Second
	DefaultMinRequests    = 5
	DefaultFailureRate    = 0.5
	DefaultCoolDown       = 10 * time.Second
	DefaultHalfOpenProbes = 1
)

// Config says when a breaker opens and how it recovers. The zero value of a
// field means its default, so Config{} is a usable configuration.
type Config struct {
	// Window is how far back a closed breaker looks when it counts outcomes.
	Window time.Duration
	// MinRequests is how many counted outcomes the window must hold before
	// its failure rate may open the breaker, so that one early failure does
	// not cut a service off.
	MinRequests int
	// FailureRate is the share of failures, in (0, 1], at which the breaker
	// opens.
	FailureRate float64
	// CoolDown is how long an open breaker refuses calls before it lets a
	// probe through.
	CoolDown time.Duration
	// HalfOpenProbes is how many calls a half-open breaker lets through at
	// once.
	HalfOpenProbes int
}

// WithDefaults returns c with every zero field set to its default.
func (c Config) WithDefaults() Config {
	return c.over(Config{Window: DefaultWindow, MinRequests: DefaultMinRequests, FailureRate: DefaultFailureRate, CoolDown: DefaultCoolDown, HalfOpenProbes: DefaultHalfOpenProbes})
}

// over returns c with every zero field set to base's.
func (c Config) over(base Config) Config {
	if c.Window == 0 {
		c.Window = base.Window
	}
	if c.MinRequests == 0 {
		c.MinRequests = base.MinRequests
	}
	if c.FailureRate == 0 {
		c.FailureRate = base.FailureRate
	}
	if c.CoolDown == 0 {
		c.CoolDown = base.CoolDown
	}
	if c.HalfOpenProbes == 0 {
		c.HalfOpenProbes = base.HalfOpenProbes
	}
	return c
}

// Validate returns an error naming the first field of c that holds a bad
// value. Zero fields are valid: they stand for their defaults.
func (c Config) Validate() error {
	c = c.WithDefaults()
	switch {
	case c.Window < 0:
		return fmt.Errorf("breaker config: Window %v is negative", c.Window)
	case c.Window < buckets:
		// Each bucket needs at least a nanosecond of the window.
		return fmt.Errorf("breaker config: Window %v is shorter than %dns", c.Window, buckets)
	case c.MinRequests < 0:
		return fmt.Errorf("breaker config: MinRequests %d is negative", c.MinRequests)
	case math.IsNaN(c.FailureRate) || c.FailureRate <= 0 || c.FailureRate > 1:
		return fmt.Errorf("breaker config: FailureRate %v is outside (0, 1]", c.FailureRate)
	case c.CoolDown < 0:
		return fmt.Errorf("breaker config: CoolDown %v is negative", c.CoolDown)
	case c.HalfOpenProbes < 0:
		return fmt.Errorf("breaker config: HalfOpenProbes %d is negative", c.HalfOpenProbes)
	}
	return nil
}

// probeWait is how long a caller refused by a busy half-open breaker should
// wait: long enough for a probe to answer, short against the cool-down.
func (c Config) probeWait() time.Duration {
	return max(c.CoolDown/2, time.Nanosecond)
}
