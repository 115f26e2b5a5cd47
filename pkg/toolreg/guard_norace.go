//go:build !race

package toolreg

// guardShared is off outside race-detector builds: the check costs a
// comparison of the tool on every lookup (see Entry.check).
const guardShared = false
