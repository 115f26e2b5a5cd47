//go:build !race

package taskstore

// guardLent is off outside race-detector builds: the check costs a
// comparison of every shared action on every read (see copyOut).
const guardLent = false
