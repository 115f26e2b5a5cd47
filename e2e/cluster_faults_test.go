package e2e_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/proto"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/stewardtest"
)

// TestClusterFaults runs a steady load of tasks proposing reads on the
// three-node cluster, two replicas of every plane, and meanwhile, in
// turn: kills the event stream leader's node and starts it again; kills
// one replica of each plane (SIGKILL) and starts it again; kills a whole
// node — its nats-server and every plane process on it — and brings it
// back after a while. Then it checks the end state as the load tests do
// (every accepted proposal ended, each op_key worked once, nothing set
// aside, every chain verifies: no event lost or twice on it) and that the
// two state replicas serve the same views. It logs the pause each fault
// caused and fails if one stops actions from ending for longer than
// clusterFaultPause.
//
// The default size suits CI (about two minutes with the build on two
// cores); the documented longer run (docs/cluster.md):
//
//	STEWARD_CLUSTER_FAULT_RATE=15 STEWARD_CLUSTER_ACTIONS=4 go test -count=1 -run TestClusterFaults -timeout 20m -v ./e2e/
func TestClusterFaults(t *testing.T) {
	l := clusterLoadFromEnv(t, clusterLoad{tasks: 1, actions: 2, clients: 6})
	rate := 6
	clusterEnvInt(t, "STEWARD_CLUSTER_FAULT_RATE", &rate)
	l.pace = time.Second / time.Duration(rate)
	f := startFaultRun(t, l, "faults")
	f.steady(5 * time.Second)
	f.leaderLoss()
	for _, plane := range []string{"control", "governance", "execution", "state"} {
		f.replicaLoss(plane)
	}
	f.nodeLoss()
	f.steady(3 * time.Second)
	d, r := f.d, f.r
	lat, endings := f.end(false)
	checkStateReplicasAgree(t, d, r.tasks)
	t.Logf("cluster faults: %d tasks, %d actions accepted, %d succeeded; wall %s; propose→ended p50 %s, p99 %s, max %s; answers %v",
		len(r.tasks), len(r.actions), len(lat), time.Since(r.started).Round(time.Millisecond),
		percentile(lat, 50).Round(time.Millisecond), percentile(lat, 99).Round(time.Millisecond), percentile(lat, 100).Round(time.Millisecond), r.answers)
	f.report(lat, endings, clusterFaultPause, clusterFaultLatency)
	t.Logf("plane logs: %s", d.symptoms())
}

// clusterFaultPause bounds how long one fault may keep every action from
// ending: one election of a new stream leader (about 10 s measured, see
// docs/cluster.md) with room to spare.
const clusterFaultPause = 15 * time.Second

// clusterFaultLatency bounds how long an action caught by a fault may take
// from its proposal to its end: an election, then a call sent to the lost
// leader that times out (5 s), or a lease and a redelivery of what a
// killed worker held (5 s each).
const clusterFaultLatency = 20 * time.Second

// faultRun is a steady load on a deployment and the faults struck
// meanwhile, in order, each with when it struck.
type faultRun struct {
	t      *testing.T
	d      *clusterDeployment
	r      *loadRun
	faults []fault
	// endLoad ends the load and returns once every call has answered.
	endLoad func()
}

// startFaultRun starts a deployment and l on it, tasks coming until end.
func startFaultRun(t *testing.T, l clusterLoad, run string) *faultRun {
	t.Helper()
	if n := clusterReplicas(t); n < 2 {
		t.Fatalf("STEWARD_CLUSTER_REPLICAS=%d: a fault run kills replicas and needs two of every plane at least", n)
	}
	return startFaultRunOn(t, startClusterDeployment(t), l, run)
}

// startFaultRunOn is startFaultRun on the deployment d.
func startFaultRunOn(t *testing.T, d *clusterDeployment, l clusterLoad, run string) *faultRun {
	t.Helper()
	f := &faultRun{t: t, d: d, r: newLoadRun()}
	until, loaded := make(chan struct{}), make(chan struct{})
	l.until = until
	go func() {
		defer close(loaded)
		applyLoad(f.d, l, run, f.r)
	}()
	f.endLoad = func() {
		close(until)
		<-loaded
	}
	return f
}

// end ends the load, waits until every task has settled and checks the
// end state (clusterVerdict); it returns what clusterVerdict does.
func (f *faultRun) end(exactCalls bool) (latencies []time.Duration, endings []time.Time) {
	f.t.Helper()
	f.endLoad()
	return clusterVerdict(f.t, f.d, f.r, settle(f.t, f.d, f.r), exactCalls)
}

type fault struct {
	name string
	at   time.Time
}

// steady lets the load run for a while without a fault.
func (f *faultRun) steady(d time.Duration) {
	f.t.Helper()
	f.mark("no fault")
	f.progress(d)
}

func (f *faultRun) mark(name string) {
	f.faults = append(f.faults, fault{name: name, at: time.Now()})
}

// progress waits at least d, and until proposals are accepted again: the
// fault is over for the callers.
func (f *faultRun) progress(d time.Duration) {
	f.t.Helper()
	from := time.Now()
	stewardtest.Eventually(f.t, 2*time.Minute, func() (bool, string) {
		_, ok := f.r.acceptedAfter(from.Add(d))
		return ok, fmt.Sprintf("no proposal accepted in the %s after %s", time.Since(from).Round(time.Second), f.faults[len(f.faults)-1].name)
	})
}

// leaderLoss kills the node that leads the event stream, waits for a new
// leader and for proposals to be taken again, and starts the node anew.
func (f *faultRun) leaderLoss() {
	f.t.Helper()
	leader := f.d.streamLeader(f.t, -1)
	f.mark("stream leader's node " + f.d.cluster.Name(leader) + " killed")
	f.d.cluster.StopNode(leader)
	f.d.streamLeader(f.t, leader)
	f.progress(2 * time.Second)
	f.d.cluster.StartNode(leader)
	f.progress(time.Second)
}

// replicaLoss kills plane's first replica, lets the others carry the load
// a while, and starts it anew.
func (f *faultRun) replicaLoss(plane string) {
	f.t.Helper()
	name := f.d.replicaNames(plane)[0]
	f.mark(name + " killed")
	f.d.kill(name)
	f.progress(5 * time.Second)
	f.d.restart(f.t, name)
	f.progress(time.Second)
}

// nodeLoss kills a node that does not lead the event stream and the
// planes on it, as a machine's loss would, and brings them back after a
// while.
func (f *faultRun) nodeLoss() {
	f.t.Helper()
	node := (f.d.streamLeader(f.t, -1) + 1) % len(f.d.cluster.Nodes)
	var on []string
	for _, name := range f.d.names {
		if f.d.procs[name].node == node {
			on = append(on, name)
		}
	}
	f.mark(fmt.Sprintf("node %s and its planes %v killed", f.d.cluster.Name(node), on))
	for _, name := range on {
		f.d.kill(name)
	}
	f.d.cluster.StopNode(node)
	f.progress(10 * time.Second)
	f.d.cluster.StartNode(node)
	for _, name := range on {
		f.d.restart(f.t, name)
	}
	f.progress(time.Second)
}

// report logs, for each fault, the actions it may have held up — those
// that ended after it struck and before the next, wherever they were
// proposed: how many, their propose→ended p50, p99 and max — and the
// longest time from when it struck to the next in which no action ended.
// It fails if that pause passes maxPause or an action took longer than
// maxLatency.
func (f *faultRun) report(lat []time.Duration, endings []time.Time, maxPause, maxLatency time.Duration) {
	f.t.Helper()
	last := slices.MaxFunc(endings, time.Time.Compare)
	for i, x := range f.faults {
		end := last // the last fault's window ends with the load
		if i+1 < len(f.faults) {
			end = f.faults[i+1].at
		}
		var window []time.Duration
		for j, e := range endings {
			if !e.Before(x.at) && e.Before(end) {
				window = append(window, lat[j])
			}
		}
		pause, from := pauseWithin(endings, x.at, end)
		worst := percentile(window, 100)
		f.t.Logf("fault %d, %s: %d actions ended before the next; propose→ended p50 %s, p99 %s, max %s; longest time without an action ending %s (from %s after it struck)",
			i, x.name, len(window), percentile(window, 50).Round(time.Millisecond), percentile(window, 99).Round(time.Millisecond),
			worst.Round(time.Millisecond), pause.Round(time.Millisecond), from.Sub(x.at).Round(time.Millisecond))
		if pause > maxPause {
			f.t.Errorf("%s: no action ended for %s, want at most %s", x.name, pause.Round(time.Millisecond), maxPause)
		}
		if worst > maxLatency {
			f.t.Errorf("%s: an action took %s from proposal to its end, want at most %s", x.name, worst.Round(time.Millisecond), maxLatency)
		}
	}
}

// replicaNames returns the names of plane's processes, in the order they
// first started.
func (d *clusterDeployment) replicaNames(plane string) []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.DeleteFunc(slices.Clone(d.names), func(name string) bool { return d.procs[name].plane != plane })
}

// pauseWithin returns the longest time between start and end in which no
// action ended, and when it began: the pause of a fault that struck at
// start, before the next struck at end.
func pauseWithin(endings []time.Time, start, end time.Time) (time.Duration, time.Time) {
	s := []time.Time{start}
	for _, e := range endings {
		if e.After(start) {
			s = append(s, e)
		}
	}
	s = append(s, end)
	slices.SortFunc(s, time.Time.Compare)
	var gap time.Duration
	var from time.Time
	for i := 1; i < len(s) && s[i-1].Before(end); i++ {
		next := s[i]
		if next.After(end) {
			next = end
		}
		if g := next.Sub(s[i-1]); g > gap {
			gap, from = g, s[i-1]
		}
	}
	return gap, from
}

// checkStateReplicasAgree reads every task, and the list of all tasks,
// through each state replica directly: each projects the log on its own,
// and all must serve the same views.
func checkStateReplicasAgree(t *testing.T, d *clusterDeployment, tasks []string) {
	t.Helper()
	states := d.live("state")
	var differ []string
	for _, id := range tasks {
		var first *stewardv1.Task
		for i, s := range states {
			resp, err := s.query.GetTask(context.Background(), connect.NewRequest(&stewardv1.GetTaskRequest{TaskId: id}))
			if err != nil {
				differ = append(differ, fmt.Sprintf("%s: state replica %d: %v", id, i, err))
				break
			}
			if i == 0 {
				first = resp.Msg.Task
			} else if !proto.Equal(first, resp.Msg.Task) {
				differ = append(differ, fmt.Sprintf("%s: state replica %d serves %d events, replica 0 %d", id, i, resp.Msg.Task.EventCount, first.EventCount))
			}
		}
	}
	lists := make([][]*stewardv1.Task, len(states))
	for i, s := range states {
		lists[i] = listAll(t, s)
		if i > 0 && !slices.EqualFunc(lists[0], lists[i], func(a, b *stewardv1.Task) bool { return proto.Equal(a, b) }) {
			differ = append(differ, fmt.Sprintf("ListTasks: state replica %d lists %d tasks, replica 0 %d, not the same", i, len(lists[i]), len(lists[0])))
		}
	}
	if len(differ) > 0 {
		t.Errorf("the state replicas serve different views of %d tasks; e.g.\n  %s", len(differ), strings.Join(examples(differ), "\n  "))
	}
	t.Logf("state replicas: %d serve the same %d tasks (GetTask) and the same list of %d (ListTasks)", len(states), len(tasks), len(lists[0]))
}

// listAll returns every task s lists, page by page.
func listAll(t *testing.T, s clients) []*stewardv1.Task {
	t.Helper()
	var out []*stewardv1.Task
	token := ""
	for {
		resp, err := s.query.ListTasks(context.Background(), connect.NewRequest(&stewardv1.ListTasksRequest{PageToken: token}))
		if err != nil {
			t.Fatalf("ListTasks: %v", err)
		}
		out = append(out, resp.Msg.Tasks...)
		if token = resp.Msg.NextPageToken; token == "" {
			return out
		}
	}
}
