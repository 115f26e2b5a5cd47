// Package crashpoint kills the process at named points, for tests that
// prove Steward survives a crash anywhere dangerous. It is guarded by an
// environment variable that no deployment sets: with STEWARD_CRASH_AT
// unset, Here is a map lookup that returns.
//
// STEWARD_CRASH_AT holds a comma-separated list of point names. The first
// time the process reaches a listed point it writes "crashpoint: <name>" to
// standard error and sends itself SIGKILL: no deferred function runs, no
// buffer is flushed, nothing is acknowledged — as when the machine dies.
package crashpoint

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"syscall"
)

// EnvVar names the points to crash at.
const EnvVar = "STEWARD_CRASH_AT"

// The named points, in the order a governed action passes them.
const (
	// AfterProposal: the control plane appended ActionProposed.
	AfterProposal = "after-proposal"
	// AfterPermit: governance appended ActionPermitted.
	AfterPermit = "after-permit"
	// AfterClaim: the execution plane recorded the claim and has not
	// made the call. On the common path the claim is carried by the
	// permit's first dispatch (one ActionDispatched from permitted), so
	// the point is right after that append, before the call: the dispatch
	// is on the log and the call was never made, and recovery records the
	// outcome unknown and settles it by asking the tool. When something
	// stood between the permit and the call, the claim is ActionClaimed
	// on its own, and the point is right after it, before the dispatch.
	AfterClaim = "after-claim"
	// AfterDispatch: the tool call returned and its outcome is not
	// recorded.
	AfterDispatch = "after-dispatch"
	// AfterRetryDispatch: the call of a retry — made when a durable
	// timer ended its wait — returned and its outcome is not recorded.
	AfterRetryDispatch = "after-retry-dispatch"
	// AfterOutcome: the outcome is on the log and the state plane may not
	// have projected it.
	AfterOutcome = "after-outcome"
	// DuringCompensation: the control plane proposed a compensation.
	DuringCompensation = "during-compensation"
	// DuringReconciliation: the tool's status query answered and the
	// settlement is not recorded.
	DuringReconciliation = "during-reconciliation"
)

// Points lists every named point.
var Points = []string{AfterProposal, AfterPermit, AfterClaim, AfterDispatch, AfterRetryDispatch, AfterOutcome, DuringCompensation, DuringReconciliation}

// The named points of a plan's run, each a moment a kill leaves a plan's
// step half done; e2e/plan_crash_test.go covers them, not the matrix.
const (
	// DuringForeach: a plan's foreach step proposed the action of one
	// item and not of the next: the expansion is half on the log.
	DuringForeach = "during-foreach"
	// DuringRevision: a plan's revision is on the log (PlanSubmitted)
	// and the driver has not acted on it: nothing withdrawn, nothing new
	// proposed.
	DuringRevision = "during-revision"
)

// PlanPoints lists every named point of a plan's run.
var PlanPoints = []string{DuringForeach, DuringRevision}

var armed = sync.OnceValue(func() map[string]bool {
	m := map[string]bool{}
	for _, p := range strings.Split(os.Getenv(EnvVar), ",") {
		if p = strings.TrimSpace(p); p != "" {
			m[p] = true
		}
	}
	return m
})

// Here kills the process if point is armed.
func Here(point string) {
	if !armed()[point] {
		return
	}
	fmt.Fprintf(os.Stderr, "crashpoint: %s\n", point)
	_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
	select {} // the signal is on its way
}
