//go:build !race

package raceguard

// On is false outside race-detector builds: each check compares what it
// guards on every read or change, which production does not pay for.
const On = false
