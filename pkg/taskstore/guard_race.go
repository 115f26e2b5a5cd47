//go:build race

package taskstore

// guardLent turns on, in race-detector builds (the tests), the check that
// no caller changes an action entry it shares with the fold (copyOut).
const guardLent = true
