package execution

import "github.com/steward-run/steward/services/execution/breaker"

// BeforeClaim makes the plane run f just before each claim it appends —
// an ActionClaimed, or a first dispatch that carries the claim — so that a
// test can make a race with the claim certain.
func BeforeClaim(f func()) Option { return func(p *Plane) { p.beforeClaim = f } }

// The kinds of the plane's timers.
const (
	TimerWait      = timerWait
	TimerReconcile = timerReconcile
)

// Breakers returns the plane's circuit breakers, for a test to put one in
// the state it needs.
func (p *Plane) Breakers() *breaker.Set { return p.breakers }
