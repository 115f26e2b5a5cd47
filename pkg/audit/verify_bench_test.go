package audit_test

import (
	"fmt"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/steward-run/steward/pkg/audit"
	"github.com/steward-run/steward/pkg/event"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// exportSize is how many events BenchmarkVerify verifies per iteration:
// exportTasks exports of exportActions governed actions each.
const (
	exportTasks   = 1000
	exportActions = 166 // six events each, plus the task's created and started: 998 events
)

var (
	exportOnce sync.Once
	exports    [][][]byte
	exportLen  int
)

// governedTask is the history of a task that runs n governed actions to
// success (proposal, policy, permit, claim, dispatch, outcome), sealed.
func governedTask(b *testing.B, taskID string, n int) [][]byte {
	b.Helper()
	payloads := []event.Payload{
		&stewardv1.TaskCreated{Contract: &stewardv1.TaskContract{Intent: "verify speed", AllowedTools: []string{"put"}}, RequestId: "r-" + taskID},
		&stewardv1.TaskStarted{},
	}
	for i := range n {
		id, permit := fmt.Sprintf("a%d", i), fmt.Sprintf("p%d", i)
		hash, req := fmt.Sprintf("h%064d", i), fmt.Sprintf("r%064d", i)
		payloads = append(payloads,
			&stewardv1.ActionProposed{Action: &stewardv1.Action{ActionId: id, ProposalId: "prop-" + id, ActionHash: hash, RequestHash: req, Tool: "put", Target: "shelf:" + id}},
			&stewardv1.PolicyEvaluated{ActionId: id, Snapshot: &stewardv1.PolicySnapshot{Decision: stewardv1.PolicyDecision_POLICY_DECISION_ALLOW}},
			&stewardv1.ActionPermitted{Permit: &stewardv1.ActionPermit{PermitId: permit, ActionId: id, ActionHash: hash, RequestHash: req}},
			&stewardv1.ActionClaimed{ActionId: id, PermitId: permit, Worker: "w1"},
			&stewardv1.ActionDispatched{ActionId: id, Attempt: 1},
			&stewardv1.ActionOutcomeRecorded{ActionId: id, Outcome: &stewardv1.Outcome{Status: stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED}},
		)
	}
	return sealed(b, taskID, payloads...)
}

// BenchmarkVerify verifies a one-million-event export — a thousand tasks
// of a thousand events of governed actions — the way `steward audit
// verify` does (audit.Verify: hash, link and fold of every event), and
// reports events/s. Issue 13 asks for at least 200k/s.
func BenchmarkVerify(b *testing.B) {
	exportOnce.Do(func() {
		for i := range exportTasks {
			exports = append(exports, governedTask(b, fmt.Sprintf("t%d", i), exportActions))
			exportLen += len(exports[i])
		}
	})
	b.ReportAllocs()
	b.ResetTimer()
	start, cpu := time.Now(), cpuTime(b)
	for b.Loop() {
		for i, evs := range exports {
			if rep := audit.Verify(fmt.Sprintf("t%d", i), evs); !rep.OK() || rep.Events != len(evs) {
				b.Fatalf("task t%d: %d of %d events verified, break %v", i, rep.Events, len(evs), rep.Break)
			}
		}
	}
	// Other work on a shared machine slows the wall clock down, not the
	// CPU time the verification takes: both are reported.
	b.ReportMetric(float64(exportLen*b.N)/time.Since(start).Seconds(), "events/s")
	b.ReportMetric(float64(exportLen*b.N)/(cpuTime(b)-cpu).Seconds(), "events/cpu-s")
	b.ReportMetric(float64(exportLen), "events/op")
}

// cpuTime is the CPU time the process has used, user and system.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
