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
// and the planes spread over the nodes so that a plane's reads go through
// another node than the writes it reacts to.
type clusterDeployment struct {
	cluster *stewardtest.Cluster
	tool    *stewardtest.Tool
	// controls are the TaskService clients of the control planes, one per
	// process; load spreads its callers over them.
	controls []stewardv1connect.TaskServiceClient
	state    clients
	// trusted is governance's credential key, for the chain check.
	trusted ed25519.PublicKey
	// procs are the planes, named plane@node (node counted from 1).
	procs map[string]*proc
	names []string // procs' names, in the order they started
}

// clusterPlanes is where each plane runs: one node index per process.
// Two control planes take the commands, on the two nodes that run no
// governance, so that a task created through one node is reacted to and
// read through the others.
var clusterPlanes = []struct {
	plane string
	node  int
}{
	{"control", 0}, {"governance", 1}, {"execution", 2}, {"state", 0}, {"control", 2},
}

// startClusterDeployment starts the cluster and the planes, with a read
// tool, search, served by a reference HTTP tool that answers status
// queries.
func startClusterDeployment(t *testing.T) *clusterDeployment {
	t.Helper()
	b := startClusterBase(t)
	d := &clusterDeployment{cluster: b.cluster, tool: stewardtest.StartTool(t), procs: map[string]*proc{}}
	// The search tool offers the status query: a read whose outcome went
	// unrecorded while the stream had no leader is settled by asking the
	// tool, not left to a person.
	search := strings.Replace(governedTools(d.tool)[0], `"http": {"url": `, `"statusQuery": true, "http": {"statusUrl": "`+d.tool.URL+`/status", "url": `, 1)
	tools := writeFile(t, b.dir, "tools.json", `{"tools": [`+search+`]}`)
	var governance string
	for _, p := range clusterPlanes {
		var args []string
		if p.plane == "execution" {
			args = []string{"--tools", tools, "--sandbox", filepath.Join(b.dir, "sandbox")}
		}
		name := fmt.Sprintf("%s@%d", p.plane, p.node+1)
		pr := b.startPlane(t, p.plane, p.node, governance, nil, args...)
		d.procs[name], d.names = pr, append(d.names, name)
		switch p.plane {
		case "control":
			d.controls = append(d.controls, newClients(pr.url).tasks)
		case "governance":
			governance = pr.url
			gov := stewardv1connect.NewGovernanceServiceClient(http.DefaultClient, pr.url)
			resp, err := gov.GetCredentialKey(context.Background(), connect.NewRequest(&stewardv1.GetCredentialKeyRequest{}))
			if err != nil {
				t.Fatal(err)
			}
			d.trusted = resp.Msg.PublicKey
		case "state":
			d.state = newClients(pr.url)
		}
	}
	// The execution plane registers the tool on the log as it starts; a
	// proposal for it is refused until the control planes have read it.
	k := contract()
	k.AllowedTools = []string{"search"}
	// A probe is a task of its own at each try: one whose start was lost
	// (issue 26) would refuse every proposal.
	probe := 0
	stewardtest.Eventually(t, 30*time.Second, func() (bool, string) {
		probe++
		for i, c := range d.controls {
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
	return d
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
	l, err := eventlog.Open(context.Background(), bus.JS, eventlog.Config{Replicas: 3})
	if err != nil {
		t.Fatal(err)
	}
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
