//go:build race

package raceguard

// On is true in race-detector builds (the tests): the checks that no one
// changes what the fold, the task store or the tool registry share run
// there.
const On = true
