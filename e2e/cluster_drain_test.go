package e2e_test

import (
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/steward-run/steward/pkg/eventlog"
)

// TestClusterDrain sends SIGTERM under a steady load to a replica of the
// control plane, then of the execution plane, twice each, starting each
// anew after: the replica finishes the reactions and tool calls it runs
// and hands back the events it holds, so the other replica carries on
// with no pause of the ack wait's length (eventlog.ReactionAckWait), which
// each event dropped by the stopping replica would cost, and no call is
// cut off (an unknown outcome, a call made twice). The end state is the
// load tests', each read called once.
//
// In a fresh-clone CI run under -race one action of 380 once took 5.2 s,
// one ack wait, after a SIGTERM to a control replica: the stopping
// replica's pull request outlived its inbox, and the consumer's leader on
// another node could send it one more event (eventlog's pull.go says how
// a stop now leaves nothing in flight). It still runs only with
// STEWARD_CLUSTER_DRAIN=1: after that fix, 8 of 9 runs under -race passed
// (slowest action 0.82 s), and one, while the machine also compiled,
// had three actions of 5.2–6.1 s after SIGTERMs (issue 29, open).
//
//	STEWARD_CLUSTER_DRAIN=1 go test -race -count=1 -run 'TestClusterDrain$' -v ./e2e/
func TestClusterDrain(t *testing.T) {
	if os.Getenv("STEWARD_CLUSTER_DRAIN") == "" {
		t.Skip("an action waited 5 s after a SIGTERM in 1 of 9 runs under -race on a loaded machine: set STEWARD_CLUSTER_DRAIN=1 to run it")
	}
	l := clusterLoadFromEnv(t, clusterLoad{tasks: 1, actions: 2, clients: 6})
	l.pace = time.Second / 8
	f := startFaultRun(t, l, "drain")
	f.steady(3 * time.Second)
	controls, workers := f.d.replicaNames("control"), f.d.replicaNames("execution")
	for i := range 2 {
		f.drain(controls[i%len(controls)])
		f.drain(workers[i%len(workers)])
	}
	f.steady(2 * time.Second)
	d, r := f.d, f.r
	lat, endings := f.end(true)
	t.Logf("cluster drain: %d tasks, %d actions accepted, %d succeeded; propose→ended p50 %s, p99 %s, max %s; answers %v",
		len(r.tasks), len(r.actions), len(lat), percentile(lat, 50).Round(time.Millisecond), percentile(lat, 99).Round(time.Millisecond),
		percentile(lat, 100).Round(time.Millisecond), r.answers)
	f.report(lat, endings, eventlog.ReactionAckWait/2, eventlog.ReactionAckWait)
	t.Logf("plane logs: %s", d.symptoms())
}

// drain sends SIGTERM to the process name, lets the others carry the load
// a while, and starts it anew.
func (f *faultRun) drain(name string) {
	f.t.Helper()
	f.mark("SIGTERM to " + name)
	f.d.terminate(f.t, name)
	f.progress(3 * time.Second)
	f.d.restart(f.t, name)
	f.progress(time.Second)
}

// terminate stops the process name with SIGTERM, as Kubernetes stops a
// pod, and waits for its clean exit; restart starts it anew.
func (d *clusterDeployment) terminate(t *testing.T, name string) {
	t.Helper()
	d.mu.Lock()
	p := d.procs[name]
	p.down = true
	d.mu.Unlock()
	p.stopWith(t, syscall.SIGTERM)
}
