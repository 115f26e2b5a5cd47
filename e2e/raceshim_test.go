package e2e_test

import (
	"testing"
	"time"

	"github.com/steward-run/steward/pkg/stewardtest"
)

// What race_test.go still uses of the old helpers, over the kit. This file
// goes when race_test.go moves to stewardtest.NewEnv and stewardtest.Tool.

// toolServer is the reference tool as race_test.go counts it.
type toolServer struct{ *stewardtest.Tool }

func startToolServer(t *testing.T) *toolServer { return &toolServer{stewardtest.StartTool(t)} }

// executions returns how many distinct keys the tool did work for, and
// how many requests it got in all.
func (ts *toolServer) executions() (keys, requests int) {
	seen := map[string]bool{}
	for _, w := range ts.Worked() {
		seen[w.Key] = true
	}
	return len(seen), ts.Calls()
}

func (ts *toolServer) callsFor(key string) int { return ts.CallsFor(key) }

func sleepBriefly() { time.Sleep(10 * time.Millisecond) }
