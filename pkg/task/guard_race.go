//go:build race

package task

// guardShared turns on, in race-detector builds (the tests), the check
// that a change to an action leaves the entry it replaces as it was
// (checkShared).
const guardShared = true
