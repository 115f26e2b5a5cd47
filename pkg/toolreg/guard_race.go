//go:build race

package toolreg

// guardShared turns on, in race-detector builds (the tests), the check
// that no reader changes an entry the registry hands out (Entry.check).
const guardShared = true
