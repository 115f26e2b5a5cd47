//go:build !stewardtestclock

package app

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestAnOrdinaryBuildHasNoTestClock: the clock the e2e tests inject
// (testclock.go, build tag stewardtestclock) is not in an ordinary build:
// with the variable set and its file naming another year, the planes'
// clock is the system's.
func TestAnOrdinaryBuildHasNoTestClock(t *testing.T) {
	file := filepath.Join(t.TempDir(), "clock")
	if err := os.WriteFile(file, []byte("2037-03-08T07:30:00Z"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("STEWARD_TEST_CLOCK_FILE", file)
	before := time.Now()
	got := processClock()()
	if got.Before(before) || got.After(time.Now()) {
		t.Fatalf("the clock of an ordinary build read %s, not the system's", got)
	}
}
