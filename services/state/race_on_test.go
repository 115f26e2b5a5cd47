//go:build race

package state_test

// raceDetector says the tests run under the race detector, whose
// slowdown is not the code's: timing tests leave it to scripts/test's
// run without it.
const raceDetector = true
