// The crash matrix runs each crash point STEWARD_CRASH_RUNS times (default
// 2, so CI stays fast; on the cluster STEWARD_CLUSTER_CRASH_RUNS, default
// 1: cluster_crash_test.go); some points run twice over, once restarted under
// the same worker name and once under a new one (name+new-worker), which
// recovers only after the dead worker's lease. The full suite:
//
//	STEWARD_CRASH_RUNS=10 go test -count=1 -run TestCrashMatrix -v ./e2e/

package e2e_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/steward-run/steward/pkg/crashpoint"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/stewardtest"
)

const (
	// crashWait bounds how long the armed binary takes to reach its point.
	crashWait = 15 * time.Second
	// recoveryWait bounds how long the restarted binary takes to finish
	// what the crash interrupted. It is well past the log's ack wait
	// (eventlog.ReactionAckWait), so a recovery that waits for a
	// redelivery still passes (and shows in the recovery times).
	recoveryWait = 45 * time.Second
	// statusQuerySettler is how the ledger names a settlement by the
	// tool's status query.
	statusQuerySettler = "status query"
)

// crashScenario drives a task to one crash point and says what recovery
// looks like.
type crashScenario struct {
	point string
	// name tells the scenario apart from others at the same point; the
	// point's name when empty.
	name string
	// workers are the --worker names of the armed binary and of the
	// restarted one; both are left to the default when empty.
	workers [2]string
	// within bounds the recovery, from the restart, more tightly than
	// recoveryWait; zero for no bound of its own.
	within time.Duration
	// drive runs against the armed binary until it dies at point.
	drive func(t *testing.T, r *crashRun)
	// recovered reports whether the restarted binary finished the work.
	recovered func(tk *stewardv1.Task) bool
	// check makes the point's own checks on the recovered task.
	check func(t *testing.T, r *crashRun, tk *stewardv1.Task, history []*stewardv1.EventRecord)
}

// settlement is how a scenario's action may come to succeed.
type settlement int

const (
	// byAnswer: from the tool's answer to the call; nobody asks the tool.
	byAnswer settlement = iota
	// byStatusQuery: the outcome was recorded as unknown and the status
	// query settled it.
	byStatusQuery
	// eitherWay: the point is in another plane than the one that runs the
	// call, and in one process the call may already be in flight when the
	// binary dies; then byStatusQuery, else byAnswer.
	eitherWay
)

func crashScenarios() []crashScenario {
	step := func(point, tool string, settle settlement, asks int) crashScenario {
		return crashScenario{
			point:     point,
			drive:     func(t *testing.T, r *crashRun) { r.propose(t, "step", tool) },
			recovered: actionSucceeded("step"),
			check: func(t *testing.T, r *crashRun, tk *stewardv1.Task, history []*stewardv1.EventRecord) {
				checkStep(t, r, tk, history, settle, asks)
			},
		}
	}
	return []crashScenario{
		step(crashpoint.AfterProposal, "put", eitherWay, 1),
		step(crashpoint.AfterPermit, "put", eitherWay, 1),
		// The permit's first dispatch carries its claim: the binary dies
		// after that append and before the call. The dispatch has no
		// outcome, so the restart calls it unknown and asks the tool,
		// which has no record of the key (not accepted); the call is then
		// made once, under a new permit, with the same op_key.
		step(crashpoint.AfterClaim, "put", byStatusQuery, 1),
		// The call went out and came back, but nothing recorded how: the
		// restart must call the outcome unknown and ask the tool.
		step(crashpoint.AfterDispatch, "put", byStatusQuery, 1),
		// The same for a retry: the first call fails transiently, the
		// retry's timer fires, its call works and the binary dies before
		// the outcome. The timer comes again after the restart, and the
		// call is called unknown, not made again.
		step(crashpoint.AfterRetryDispatch, "flakyput", byStatusQuery, 1),
		step(crashpoint.AfterOutcome, "put", byAnswer, 0),
		{
			point:     crashpoint.DuringCompensation,
			drive:     driveCompensation,
			recovered: func(tk *stewardv1.Task) bool { return tk.Status == stewardv1.TaskStatus_TASK_STATUS_FAILED },
			check:     checkCompensation,
		},
		// The slow tool outlasts its timeout: unknown, asked, crash before
		// the settlement, asked again after the restart.
		step(crashpoint.DuringReconciliation, "slowput", byStatusQuery, 2),
		// The worker does not come back under its name, as a rescheduled
		// pod does not: the dispatch it left, which carried its claim, is
		// taken over by the new one once the lease has run out — unknown,
		// asked, not accepted — and the new one claims the new permit and
		// calls, once, all within 10 s of the restart.
		renamed(step(crashpoint.AfterClaim, "put", byStatusQuery, 1), newWorkerBound, func(t *testing.T, history []*stewardv1.EventRecord, a *stewardv1.Action) {
			if got := claimsOf(history, a.ActionId); !diedThenRestarted(got) {
				t.Errorf("claims by %v; want %v: the dead worker's, carried by its dispatch, then the new worker's of the new permit", got, crashWorkers)
			}
			if got := dispatchesOf(history, a.ActionId); !diedThenRestarted(got) {
				t.Errorf("dispatches by %v; want %v: the dead worker's, never called, then the new worker's", got, crashWorkers)
			}
			if u := unknownOutcome(history, a.ActionId); !restartedWorker(u.GetEvent().GetActor().GetPrincipal()) ||
				!strings.Contains(u.GetEvent().GetActionOutcomeRecorded().GetOutcome().GetReason(), crashWorkers[0]) {
				t.Errorf("unknown outcome %v; want it recorded by the new worker %s, naming the silent %s", u.GetEvent(), crashWorkers[1], crashWorkers[0])
			}
		}),
		// The call went out and the worker died before its outcome; the
		// new worker calls it unknown once the lease has run out, and the
		// status query settles it: never called again.
		renamed(step(crashpoint.AfterDispatch, "put", byStatusQuery, 1), defaultLease+newWorkerBound, checkTakenOverCall(1)),
		// The same for a retry, which a durable timer sent: the timer comes
		// again to the new worker, which takes the call over the same way.
		renamed(step(crashpoint.AfterRetryDispatch, "flakyput", byStatusQuery, 1), defaultLease+newWorkerBound, checkTakenOverCall(2)),
	}
}

// checkTakenOverCall: the worker that died made all the action's
// dispatches, and the new worker recorded the last one's outcome unknown,
// naming the silent worker.
func checkTakenOverCall(dispatches int) func(t *testing.T, history []*stewardv1.EventRecord, a *stewardv1.Action) {
	return func(t *testing.T, history []*stewardv1.EventRecord, a *stewardv1.Action) {
		t.Helper()
		got := dispatchesOf(history, a.ActionId)
		if len(got) != dispatches || slices.ContainsFunc(got, func(w string) bool { return w != crashWorkers[0] }) {
			t.Errorf("dispatches by %v; want %d, all by the worker that died (%s)", got, dispatches, crashWorkers[0])
		}
		u := unknownOutcome(history, a.ActionId)
		if by := u.GetEvent().GetActor().GetPrincipal(); !restartedWorker(by) {
			t.Errorf("the unknown outcome was recorded by %q; want the new worker %s", by, crashWorkers[1])
		}
		if reason := u.GetEvent().GetActionOutcomeRecorded().GetOutcome().GetReason(); !strings.Contains(reason, crashWorkers[0]) {
			t.Errorf("the outcome is unknown because %q; want the reason to name the silent worker %s", reason, crashWorkers[0])
		}
	}
}

const (
	// newWorkerBound is how soon after a restart under a new worker name
	// a claim the old one left must be done (issue 11).
	newWorkerBound = 10 * time.Second
	// defaultLease is the execution plane's default --lease: a dispatch
	// is not taken for lost before it runs out.
	defaultLease = 5 * time.Second
)

// crashWorkers are the worker names of the armed binary and of the
// restarted one in the scenarios that restart under a new name.
var crashWorkers = [2]string{"crash-w1", "crash-w2"}

// restartedWorker reports whether worker is the new worker: crash-w2 or,
// on a cluster, one of the peers started with it (crash-w2-peer1 …).
func restartedWorker(worker string) bool {
	return worker == crashWorkers[1] || strings.HasPrefix(worker, crashWorkers[1]+"-peer")
}

// diedThenRestarted reports whether workers are the worker that died and
// then the new worker.
func diedThenRestarted(workers []string) bool {
	return len(workers) == 2 && workers[0] == crashWorkers[0] && restartedWorker(workers[1])
}

// renamed is sc with the binary restarted under a new worker name: it must
// recover within bound of the restart, and pass sc's checks and check's,
// which get the scenario's one action.
func renamed(sc crashScenario, bound time.Duration, check func(t *testing.T, history []*stewardv1.EventRecord, a *stewardv1.Action)) crashScenario {
	sc.name = sc.point + "+new-worker"
	sc.workers = crashWorkers
	sc.within = bound
	base := sc.check
	sc.check = func(t *testing.T, r *crashRun, tk *stewardv1.Task, history []*stewardv1.EventRecord) {
		t.Helper()
		base(t, r, tk, history)
		if len(tk.Actions) == 1 {
			check(t, history, tk.Actions[0])
		}
	}
	return sc
}

// nameOf is the scenario's name in subtests and figures.
func (sc crashScenario) nameOf() string {
	if sc.name != "" {
		return sc.name
	}
	return sc.point
}

// TestCrashMatrix kills the real binary at every named crash point (the
// binary sends itself SIGKILL there), restarts it on the same data without
// the crash armed, and checks that the task reaches the state it would
// have reached without the crash; that the tool worked once per op_key and
// once per action (and got one request per key: a dispatch whose outcome
// is unknown is settled by asking, never by calling again); that no event
// seen before the crash is lost and none is duplicated — every event id
// once, every ledger step once; that the hash chain verifies; and that the
// projection agrees with the log. It prints how long recovery took.
func TestCrashMatrix(t *testing.T) {
	runCrashMatrix(t, crashRuns(t, "STEWARD_CRASH_RUNS", 2), startDevCrash)
}

// startDevCrash starts `steward dev` for one run, with point armed, on a
// data directory of the run's own; its restart is the binary anew on the
// same data.
func startDevCrash(t *testing.T, tool *stewardtest.Tool, point, worker string) crashStarted {
	t.Helper()
	flags := crashFlags(t, tool)
	data := t.TempDir()
	as := func(worker string) []string {
		if worker == "" {
			return flags
		}
		return append(slices.Clone(flags), "--worker="+worker)
	}
	p := startBinaryEnv(t, data, []string{crashpoint.EnvVar + "=" + point}, as(worker)...)
	return crashStarted{
		c: newClients(p.url), watch: p.url, armed: p,
		restart: func(t *testing.T, worker string) clients {
			p := startBinaryEnv(t, data, []string{crashpoint.EnvVar + "="}, as(worker)...)
			return newClients(p.url)
		},
	}
}

// actionSucceeded reports a running task whose action proposalID succeeded.
func actionSucceeded(proposalID string) func(*stewardv1.Task) bool {
	return func(tk *stewardv1.Task) bool {
		a := byProposal(tk, proposalID)
		return a != nil && a.Status == stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED
	}
}

func byProposal(tk *stewardv1.Task, proposalID string) *stewardv1.Action {
	for _, a := range tk.GetActions() {
		if a.ProposalId == proposalID {
			return a
		}
	}
	return nil
}

func describeActions(tk *stewardv1.Task) string {
	var s string
	for _, a := range tk.GetActions() {
		s += fmt.Sprintf("  %s %s %s settled_by=%q compensates=%q outcome=%v\n", a.ActionId, a.Tool, a.Status, a.SettledBy, a.Compensates, a.Outcome)
	}
	return s
}
