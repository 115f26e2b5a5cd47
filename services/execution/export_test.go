package execution

// SetBeforeClaim makes p run f just before each claim it appends, so that a
// test can make a race with the claim certain.
func SetBeforeClaim(p *Plane, f func()) { p.beforeClaim = f }

// The kinds of the plane's timers.
const (
	TimerWait      = timerWait
	TimerReconcile = timerReconcile
)
