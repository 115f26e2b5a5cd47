//go:build !race

package task

// guardShared is off outside race-detector builds: the check costs a deep
// copy and a comparison of the action on every change (see checkShared).
const guardShared = false
