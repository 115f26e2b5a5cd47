package e2e_test

import (
	"context"
	"crypto/ed25519"
	"fmt"
	"net/http"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"connectrpc.com/connect"

	"github.com/steward-run/steward/pkg/eventlog"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/gen/steward/v1/stewardv1connect"
	"github.com/steward-run/steward/pkg/stewardtest"
)

// clusterDeployment is Steward deployed as docker-compose and Kubernetes
// deploy it, on a three-node JetStream cluster, each node a process of its
// own that the test may kill (stewardtest.ClusterProcesses): the
// streams at three replicas, each plane the real binary (`steward serve
// --replicas 3`) signed in as its own NATS user (`steward nats-users`),
// replicas of every plane (clusterReplicas) on different nodes, so that a
// plane's reads go through another node than the writes it reacts to.
type clusterDeployment struct {
	cluster *stewardtest.Cluster
	tool    *stewardtest.Tool
	// trusted is governance's credential key, for the chain check.
	trusted ed25519.PublicKey
	// procs are the planes' processes, named plane@node (node counted
	// from 1) or, for a plane's later replicas on a node,
	// plane@node.replica.
	procs map[string]*planeProc
	names []string // procs' names, in the order they first started
	// replicas is how many processes each plane runs.
	replicas int
	base     *clusterBase
	// tools is the tools file the execution planes register; governance
	// the URL of the last governance plane started.
	tools, governance string
	mu                sync.Mutex // guards procs' entries, which a fault test replaces
	calls             int        // calls handed a control plane (nextControl)
	// first is the binary a process starts as, bins the one it was
	// upgraded to (TestRollingUpgrade).
	first string
	bins  map[string]string
}

// planeProc is one process of a plane, as a fault test may kill it and
// start it anew.
type planeProc struct {
	plane string
	node  int
	*proc
	api  clients // its API
	down bool    // killed and not started again
}

// clusterReplicas is how many processes of each plane a deployment runs:
// two, or STEWARD_CLUSTER_REPLICAS.
func clusterReplicas(t *testing.T) int {
	t.Helper()
	n := 2
	clusterEnvInt(t, "STEWARD_CLUSTER_REPLICAS", &n)
	return n
}

// replicaNode is the node replica i (from 0) of a plane whose first
// replica runs on node runs on: the next nodes in turn, so that two
// replicas of one plane never share a node.
func replicaNode(node, i int) int { return (node + i) % 3 }

// startClusterDeployment starts the cluster and clusterReplicas processes
// of every plane, the first of each where clusterServices places it, with
// a read tool, search, served by a reference HTTP tool that answers status
// queries.
func startClusterDeployment(t *testing.T) *clusterDeployment {
	t.Helper()
	return startClusterDeploymentOf(t, binary)
}

// startClusterDeploymentOf is startClusterDeployment with every process
// the binary at bin until it is upgraded.
func startClusterDeploymentOf(t *testing.T, bin string) *clusterDeployment {
	t.Helper()
	b := startClusterBase(t)
	d := &clusterDeployment{cluster: b.cluster, tool: stewardtest.StartTool(t), procs: map[string]*planeProc{}, replicas: clusterReplicas(t),
		first: bin, bins: map[string]string{}}
	// The search tool offers the status query: a read whose outcome went
	// unrecorded while the stream had no leader is settled by asking the
	// tool, not left to a person.
	search := strings.Replace(governedTools(d.tool)[0], `"http": {"url": `, `"statusQuery": true, "http": {"statusUrl": "`+d.tool.URL+`/status", "url": `, 1)
	d.tools = writeFile(t, b.dir, "tools.json", `{"tools": [`+search+`]}`)
	d.base = b
	for _, p := range clusterServices {
		for i := range d.replicas {
			d.startReplica(t, p.plane, replicaNode(p.node, i))
		}
	}
	d.probe(t)
	return d
}

// startReplica starts one more process of plane on node; it returns the
// process's name.
func (d *clusterDeployment) startReplica(t *testing.T, plane string, node int) string {
	t.Helper()
	name := fmt.Sprintf("%s@%d", plane, node+1)
	for i := 2; d.procs[name] != nil; i++ {
		name = fmt.Sprintf("%s@%d.%d", plane, node+1, i)
	}
	d.names = append(d.names, name)
	d.start(t, name, plane, node)
	return name
}

// start starts plane on node as the process name, anew if it ran before.
func (d *clusterDeployment) start(t *testing.T, name, plane string, node int) {
	t.Helper()
	var args []string
	if plane == "execution" {
		args = []string{"--tools", d.tools, "--sandbox", filepath.Join(d.base.dir, "sandbox")}
	}
	d.mu.Lock()
	bin, ok := d.bins[name]
	d.mu.Unlock()
	if !ok {
		bin = d.first
	}
	if bin == binary && d.first != binary {
		// Rolling from an earlier build, as docs/compatibility.md says: content
		// under the hash alone, which the earlier replicas read, until none runs.
		args = append(args, "--content-keys=shared")
	}
	pr := d.base.startPlaneOf(t, bin, plane, node, d.governance, nil, args...)
	d.mu.Lock()
	d.procs[name] = &planeProc{plane: plane, node: node, proc: pr, api: newClients(pr.url)}
	d.mu.Unlock()
	if plane == "governance" {
		d.governance = pr.url
		gov := stewardv1connect.NewGovernanceServiceClient(http.DefaultClient, pr.url)
		resp, err := gov.GetCredentialKey(context.Background(), connect.NewRequest(&stewardv1.GetCredentialKeyRequest{}))
		if err != nil {
			t.Fatal(err)
		}
		d.trusted = resp.Msg.PublicKey
	}
}

// kill kills the process name (SIGKILL); restart starts it anew.
func (d *clusterDeployment) kill(name string) {
	d.mu.Lock()
	p := d.procs[name]
	p.down = true
	d.mu.Unlock()
	p.kill()
}

func (d *clusterDeployment) restart(t *testing.T, name string) {
	t.Helper()
	d.mu.Lock()
	p := d.procs[name]
	d.mu.Unlock()
	d.start(t, name, p.plane, p.node)
}

// live returns the APIs of plane's processes that run, in the order they
// first started.
func (d *clusterDeployment) live(plane string) []clients {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []clients
	for _, name := range d.names {
		if p := d.procs[name]; p.plane == plane && !p.down {
			out = append(out, p.api)
		}
	}
	return out
}

// controls returns the TaskService clients of the control planes that
// run.
func (d *clusterDeployment) controls() []stewardv1connect.TaskServiceClient {
	var out []stewardv1connect.TaskServiceClient
	for _, c := range d.live("control") {
		out = append(out, c.tasks)
	}
	return out
}

// nextControl returns a control plane that runs, the next one at each
// call: a client given every control plane's address, which asks another
// when one is lost.
func (d *clusterDeployment) nextControl() stewardv1connect.TaskServiceClient {
	cs := d.controls()
	d.mu.Lock()
	defer d.mu.Unlock()
	d.calls++
	return cs[d.calls%len(cs)]
}

// state returns the API of the first state plane that runs, which the
// checks read through.
func (d *clusterDeployment) state() clients { return d.live("state")[0] }

// probe waits until every control plane takes a proposal of the search
// tool: the execution plane registers the tool on the log as it starts,
// and a proposal for it is refused until the control planes have read it.
func (d *clusterDeployment) probe(t *testing.T) {
	t.Helper()
	k := contract()
	k.AllowedTools = []string{"search"}
	// A probe is a task of its own at each try: one whose start was lost
	// (issue 26) would refuse every proposal.
	probe := 0
	stewardtest.Eventually(t, 30*time.Second, func() (bool, string) {
		probe++
		for i, c := range d.controls() {
			resp, err := c.CreateTask(context.Background(), connect.NewRequest(&stewardv1.CreateTaskRequest{RequestId: fmt.Sprintf("cluster-probe-%d-%d", probe, i), Contract: k}))
			if err != nil {
				return false, fmt.Sprintf("control %d: create: %v", i, err)
			}
			_, err = c.ProposeAction(context.Background(), connect.NewRequest(&stewardv1.ProposeActionRequest{
				TaskId: resp.Msg.Task.Contract.TaskId, ProposalId: "probe", Tool: "search", Target: "acct:42", Params: searchParams("probe"), Rationale: argued,
			}))
			if err != nil {
				return false, fmt.Sprintf("control %d: propose: %v", i, err)
			}
		}
		return true, ""
	})
}

// streamLeader returns the index of the node that leads the event stream,
// asking through another node than avoid; with avoid a node that is down
// (not -1), it waits until another node leads.
func (d *clusterDeployment) streamLeader(t *testing.T, avoid int) int {
	t.Helper()
	leader := -1
	stewardtest.Eventually(t, 30*time.Second, func() (bool, string) {
		bus := d.cluster.Bus((avoid + 1) % len(d.cluster.Nodes))
		s, err := bus.JS.Stream(context.Background(), eventlog.DefaultStream)
		if err != nil {
			return false, err.Error()
		}
		info, err := s.Info(context.Background())
		if err != nil {
			return false, err.Error()
		}
		cl := info.Cluster
		if cl == nil || cl.Leader == "" {
			return false, fmt.Sprintf("stream cluster %+v", cl)
		}
		for i := range d.cluster.Nodes {
			if d.cluster.Name(i) == cl.Leader {
				leader = i
			}
		}
		if leader == avoid {
			return false, fmt.Sprintf("stream info still names %s, which is down, as the leader", cl.Leader)
		}
		return leader >= 0, fmt.Sprintf("leader %s is not a node of the cluster", cl.Leader)
	})
	return leader
}

// deadLetters returns what the planes set aside, as "subject: reason".
func (d *clusterDeployment) deadLetters(t *testing.T) []string {
	t.Helper()
	var bus *stewardtest.Bus
	for i := range d.cluster.Nodes {
		if d.cluster.Running(i) {
			bus = d.cluster.Bus(i)
		}
	}
	l := openReplicated(t, context.Background(), bus.JS)
	set, err := l.DeadLetters(context.Background())
	if err != nil {
		t.Fatalf("read the dead letters: %v", err)
	}
	var out []string
	for _, s := range set {
		out = append(out, fmt.Sprintf("%s (seq %d): %s", s.Subject, s.Sequence, s.Reason))
	}
	return out
}

// symptoms counts, in every plane's log, the warnings and errors logged
// after start, by message, for the summary: where the symptoms
// (an event set aside, a read that found nothing) show.
func (d *clusterDeployment) symptoms() string {
	startup := []string{"open mode (--insecure)", "created a new credential signing key"}
	var parts []string
	for _, name := range d.names {
		counts := map[string]int{}
		for _, line := range strings.Split(d.procs[name].logged(), "\n") {
			if !strings.Contains(line, "level=WARN") && !strings.Contains(line, "level=ERROR") {
				continue
			}
			if slices.ContainsFunc(startup, func(s string) bool { return strings.Contains(line, s) }) {
				continue
			}
			msg := line
			if m := logMessage.FindStringSubmatch(line); m != nil {
				msg = strings.Trim(m[1], `"`)
			}
			counts[msg]++
		}
		for msg, n := range counts {
			parts = append(parts, fmt.Sprintf("%s %q×%d", name, msg, n))
		}
	}
	if len(parts) == 0 {
		return "none"
	}
	sort.Strings(parts)
	return strings.Join(parts, "; ")
}

var logMessage = regexp.MustCompile(`msg=("(?:[^"\\]|\\.)*"|\S+)`)
