package e2e_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/structpb"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/stewardtest"
)

// TestClusterGateway runs, through one address — `steward gateway`, the
// real binary, in front of the planes on the three-node cluster with the
// streams at three replicas, each plane the real binary, with bearer
// tokens — the README's tour as written, the README's walkthrough and
// docs/plans.md's plan walkthrough (the scripts themselves, bash, curl and
// jq, with the same checks as TestExampleWalkthrough and TestExamplePlan),
// every procedure of every service, gRPC reflection, and a caller who
// forges identity headers.
func TestClusterGateway(t *testing.T) {
	requireTools(t, "bash", "curl", "jq")
	d := startClusterExamples(t)
	t.Run("readme", func(t *testing.T) {
		runDocBlocksAt(t, "../README.md", d.dir, d.gateway.addr())
	})
	t.Run("walkthrough", func(t *testing.T) {
		checkWalkthrough(t, runExampleAt(t, "walkthrough.sh", d.gateway.url, d.data))
	})
	t.Run("plan", func(t *testing.T) {
		checkPlan(t, runExampleAt(t, "plan.sh", d.gateway.url, d.data))
	})
	t.Run("every procedure", func(t *testing.T) {
		checkEveryProcedure(t, d.gateway.url, d.planes, d.base.token)
	})
	t.Run("reflection", func(t *testing.T) {
		checkGatewayReflection(t, d.gateway.addr(), d.base.token)
	})
	t.Run("forged identity", func(t *testing.T) {
		checkForgedIdentity(t, d.gateway.url, d.data)
	})
}

// clusterServices is where the first process of each plane runs: spread
// over the nodes, so that a plane's reads go through another node than the
// writes it reacts to. Further replicas run on the next nodes
// (replicaNode).
var clusterServices = []struct {
	plane string
	node  int
}{
	{"control", 0}, {"governance", 1}, {"execution", 2}, {"state", 1},
}

// examplesDeployment is Steward as services on the cluster, with a gateway
// in front.
type examplesDeployment struct {
	base    *clusterBase
	gateway *proc
	planes  map[string]string // each plane's first replica's own URL
	// dir is where the docs' blocks run (docsDir); data, its
	// .steward/data, holds the token file the examples read.
	dir, data string
}

// startClusterExamples starts clusterReplicas processes of every plane on
// a new cluster the way the examples want Steward — the example tools,
// bearer tokens in a token file in the data directory, as `steward dev`
// writes it — and a gateway in front of them. It returns once a proposal of an example tool is accepted
// through the gateway.
func startClusterExamples(t *testing.T) *examplesDeployment {
	t.Helper()
	d := &examplesDeployment{base: startClusterBase(t), dir: docsDir(t), planes: map[string]string{}}
	d.data = filepath.Join(d.dir, ".steward", "data")
	if err := os.MkdirAll(d.data, 0o700); err != nil {
		t.Fatal(err)
	}
	d.base.withTokens(t, d.data)
	replicas := map[string][]string{}
	for _, p := range clusterServices {
		var args []string
		if p.plane == "execution" {
			args = []string{"--tools", "../examples/tools.json", "--sandbox", filepath.Join(d.data, "sandbox")}
		}
		for i := range clusterReplicas(t) {
			u := d.base.startPlane(t, p.plane, replicaNode(p.node, i), d.planes["governance"], nil, args...).url
			replicas[p.plane] = append(replicas[p.plane], u)
			if i == 0 {
				d.planes[p.plane] = u
			}
		}
	}
	d.gateway = startGateway(t, replicas)
	// The execution plane registers the example tools on the log as it
	// starts; a proposal of one is refused until the control plane has
	// read them. A probe is a task of its own at each try.
	admin := withToken(d.gateway.url, d.base.token)
	params, err := structpb.NewStruct(map[string]any{"customer": "probe"})
	if err != nil {
		t.Fatal(err)
	}
	k := contract()
	k.AllowedTools = []string{"lookup"}
	probe := 0
	stewardtest.Eventually(t, 30*time.Second, func() (bool, string) {
		probe++
		resp, err := admin.tasks.CreateTask(context.Background(), connect.NewRequest(&stewardv1.CreateTaskRequest{RequestId: fmt.Sprintf("examples-probe-%d", probe), Contract: k}))
		if err != nil {
			return false, fmt.Sprintf("create: %v", err)
		}
		_, err = admin.tasks.ProposeAction(context.Background(), connect.NewRequest(&stewardv1.ProposeActionRequest{
			TaskId: resp.Msg.Task.Contract.TaskId, ProposalId: "probe", Tool: "lookup", Params: params,
		}))
		return err == nil, fmt.Sprintf("propose: %v", err)
	})
	return d
}
