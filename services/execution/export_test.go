package execution

// BeforeClaim makes the plane run f just before each claim it appends —
// an ActionClaimed, or a first dispatch that carries the claim — so that a
// test can make a race with the claim certain.
func BeforeClaim(f func()) Option { return func(p *Plane) { p.beforeClaim = f } }

// The kinds of the plane's timers.
const (
	TimerWait      = timerWait
	TimerReconcile = timerReconcile
)
