//go:build stewardtestclock

package app

import (
	"fmt"
	"os"
	"strings"
	"time"
)

// TestClockEnv names the file whose content, a time in RFC 3339, is the
// clock of a binary built with the tag stewardtestclock: a stopped clock
// that a test moves by rewriting the file (e2e/schedule_kill_test.go).
// A normal build has neither this name nor the hook (clock.go).
const TestClockEnv = "STEWARD_TEST_CLOCK_FILE"

// processClock reads the time from the file TestClockEnv names, at every
// call; without the variable it is the system's. A file that does not
// read as a time is a broken test: it panics rather than fall back to a
// clock the test does not expect.
func processClock() func() time.Time {
	path := os.Getenv(TestClockEnv)
	if path == "" {
		return time.Now
	}
	return func() time.Time {
		b, err := os.ReadFile(path)
		if err == nil {
			var at time.Time
			if at, err = time.Parse(time.RFC3339Nano, strings.TrimSpace(string(b))); err == nil {
				return at
			}
		}
		panic(fmt.Sprintf("%s=%s: %v", TestClockEnv, path, err))
	}
}
