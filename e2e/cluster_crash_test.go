package e2e_test

import (
	"context"
	"fmt"
	"io"
	"log"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/steward-run/steward/pkg/crashpoint"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/stewardtest"
)

// TestClusterCrashMatrix runs the crash matrix's scenarios (crashScenarios)
// against Steward as services on the three-node cluster with the streams
// at three replicas, one process per plane: each point is armed only in
// the plane that reaches it, which kills itself there, and that plane is
// started anew with the same flags and nothing armed (the execution plane
// under the scenario's worker name), while the other planes and the nodes
// run on. The checks are the matrix's. One cluster serves every run, each
// run with planes of its own; each scenario runs once, or
// STEWARD_CLUSTER_CRASH_RUNS times:
//
//	STEWARD_CLUSTER_CRASH_RUNS=5 go test -count=1 -run TestClusterCrashMatrix -v ./e2e/
func TestClusterCrashMatrix(t *testing.T) {
	c := startClusterCrash(t)
	runCrashMatrix(t, crashRuns(t, "STEWARD_CLUSTER_CRASH_RUNS", 1), c.start)
}

// crashOwners is the plane whose code reaches each crash point.
var crashOwners = map[string]string{
	crashpoint.AfterProposal:        "control",
	crashpoint.AfterPermit:          "governance",
	crashpoint.AfterClaim:           "execution",
	crashpoint.AfterDispatch:        "execution",
	crashpoint.AfterRetryDispatch:   "execution",
	crashpoint.AfterOutcome:         "execution",
	crashpoint.DuringCompensation:   "control",
	crashpoint.DuringReconciliation: "execution",
}

// clusterCrashWorker is the execution worker's name in a scenario that
// leaves it to the default: serve's default names the process, and the
// restart must come back under the same name, as dev's does.
const clusterCrashWorker = "cluster-crash-worker"

// clusterCrash starts each run's planes on one cluster.
type clusterCrash struct {
	b *clusterBase
	// front is the crash tool's one address: the tools file registered on
	// the log names it, so every run's execution plane registers the same
	// contract; it forwards to the run's own tool.
	front      *toolFront
	tools      string // the tools file
	governance string // the last governance plane's URL
}

// startClusterCrash starts the cluster and, once, the planes without a
// crash, until a call of the crash tool succeeds: the tools are on the log
// and read before any run's armed plane gets a proposal.
func startClusterCrash(t *testing.T) *clusterCrash {
	t.Helper()
	c := &clusterCrash{b: startClusterBase(t), front: startToolFront(t)}
	c.tools = writeFile(t, c.b.dir, "tools.json", crashToolsFile(c.front.URL))
	c.front.use(startCrashTool(t))
	procs := map[string]*proc{}
	for _, p := range clusterServices {
		procs[p.plane] = c.startPlane(t, p.plane, 0, "", "")
	}
	cl := newClients(procs["state"].url)
	cl.tasks = newClients(procs["control"].url).tasks
	k := contract()
	k.AllowedTools = []string{"put"}
	params, err := structpb.NewStruct(map[string]any{"item": "probe"})
	if err != nil {
		t.Fatal(err)
	}
	// A probe is a task of its own at each try; once one is accepted, the
	// call must succeed. A plane's start may stall for a while on the
	// cluster (the state plane's rebuild once took 10 s): the waits are
	// long.
	probe := 0
	var id, actionID string
	stewardtest.Eventually(t, 45*time.Second, func() (bool, string) {
		probe++
		resp, err := cl.tasks.CreateTask(context.Background(), connect.NewRequest(&stewardv1.CreateTaskRequest{RequestId: fmt.Sprintf("crash-probe-%d", probe), Contract: k}))
		if err != nil {
			return false, fmt.Sprintf("create: %v", err)
		}
		id = resp.Msg.Task.Contract.TaskId
		a, err := cl.tasks.ProposeAction(context.Background(), connect.NewRequest(&stewardv1.ProposeActionRequest{TaskId: id, ProposalId: "probe", Tool: "put", Target: "shelf:probe", Params: params}))
		if err != nil {
			return false, fmt.Sprintf("propose: %v", err)
		}
		actionID = a.Msg.Action.ActionId
		return true, ""
	})
	waitServed(t, cl, id, 45*time.Second, func(tk *stewardv1.Task) (bool, string) {
		for _, a := range tk.Actions {
			if a.ActionId == actionID {
				return a.Status == stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED, "the probe's call is " + a.Status.String()
			}
		}
		return false, "the probe's action is not in the view"
	})
	for _, p := range clusterServices {
		procs[p.plane].stop(t)
	}
	return c
}

// start starts a run's planes, clusterReplicas processes of each, with
// point armed in the plane that reaches it. That plane runs its armed
// process alone until it dies: its consumer hands an event to any of its
// processes, and an unarmed peer that took it would never reach the
// point. The restart then starts the dead process anew and its peers,
// which recover the run together; the other planes run two processes
// throughout.
func (c *clusterCrash) start(t *testing.T, tool *stewardtest.Tool, point, worker string) crashStarted {
	t.Helper()
	c.front.use(tool)
	owner := crashOwners[point]
	if owner == "" {
		t.Fatalf("no plane is known to reach crash point %s: add it to crashOwners", point)
	}
	replicas := clusterReplicas(t)
	procs := map[string]*proc{}
	for _, p := range clusterServices {
		if p.plane == owner {
			procs[p.plane] = c.startPlane(t, p.plane, 0, point, worker)
			continue
		}
		for i := range replicas {
			pr := c.startPlane(t, p.plane, i, "", worker)
			if i == 0 {
				procs[p.plane] = pr
			}
		}
	}
	cl := func() clients {
		cl := newClients(procs["state"].url)
		cl.tasks = newClients(procs["control"].url).tasks
		return cl
	}
	return crashStarted{
		c: cl(), watch: procs["state"].url, armed: procs[owner],
		restart: func(t *testing.T, worker string) clients {
			procs[owner] = c.startPlane(t, owner, 0, "", worker)
			for i := 1; i < replicas; i++ {
				c.startPlane(t, owner, i, "", worker)
			}
			return cl()
		},
	}
}

// startPlane starts replica (from 0) of plane on its node (clusterServices,
// replicaNode) with point armed ("" for none), the execution plane as
// worker (clusterCrashWorker when "") and its further replicas as
// worker-peer1, worker-peer2 …: workers started with worker's process.
// It stops the plane gently when the test ends, unless it died: a plane
// killed at the end would leave the next run's planes its messages in
// flight.
func (c *clusterCrash) startPlane(t *testing.T, plane string, replica int, point, worker string) *proc {
	t.Helper()
	node := -1
	for _, p := range clusterServices {
		if p.plane == plane {
			node = replicaNode(p.node, replica)
		}
	}
	var args []string
	if plane == "execution" {
		if worker == "" {
			worker = clusterCrashWorker
		}
		if replica > 0 {
			worker = fmt.Sprintf("%s-peer%d", worker, replica)
		}
		args = []string{"--tools", c.tools, "--sandbox", filepath.Join(c.b.dir, "sandbox"), "--worker", worker}
	}
	p := c.b.startPlane(t, plane, node, c.governance, []string{crashpoint.EnvVar + "=" + point}, args...)
	if plane == "governance" {
		c.governance = p.url
	}
	t.Cleanup(func() {
		if p.cmd.ProcessState == nil {
			p.stop(t)
		}
	})
	return p
}

// toolFront is one address in front of a tool that changes from run to
// run.
type toolFront struct {
	URL    string
	target atomic.Pointer[url.URL]
}

func startToolFront(t *testing.T) *toolFront {
	t.Helper()
	f := &toolFront{}
	srv := httptest.NewServer(&httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) { r.SetURL(f.target.Load()) },
		// A call its caller gave up on (the slow tool's) is not news.
		ErrorLog: log.New(io.Discard, "", 0),
	})
	t.Cleanup(srv.Close)
	f.URL = srv.URL
	return f
}

// use sends the calls from now on to tool.
func (f *toolFront) use(tool *stewardtest.Tool) {
	u, err := url.Parse(tool.URL)
	if err != nil {
		panic(err)
	}
	f.target.Store(u)
}
