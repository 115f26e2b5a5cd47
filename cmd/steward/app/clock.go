//go:build !stewardtestclock

package app

import "time"

// processClock is the one clock every plane of this process takes (their
// Config.Now): the system's. A build with the tag stewardtestclock reads
// it from a file instead (testclock.go), for the tests that kill the
// binary under an injected clock; this build has no such hook.
func processClock() func() time.Time { return time.Now }
