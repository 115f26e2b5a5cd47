package main

import (
	"os"
	"runtime/pprof"
)

// profile writes a CPU profile of the arm to path until stop is called; an
// empty path profiles nothing. It is how to find where an arm's time goes
// when a figure moves.
func profile(path string) (stop func()) {
	if path == "" {
		return func() {}
	}
	f, err := os.Create(path)
	if err != nil {
		fatalf("-cpuprofile: %v", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		fatalf("-cpuprofile: %v", err)
	}
	return func() {
		pprof.StopCPUProfile()
		_ = f.Close()
	}
}
