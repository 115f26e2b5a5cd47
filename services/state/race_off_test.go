//go:build !race

package state_test

const raceDetector = false
