package e2e_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/structpb"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/gen/steward/v1/stewardv1connect"
	"github.com/steward-run/steward/pkg/stewardtest"
)

// TestClusterExamples runs the README's walkthrough and docs/plans.md's
// plan walkthrough, the scripts themselves (bash, curl and jq), against
// Steward as services on the three-node cluster with the streams at three
// replicas, each plane the real binary, with bearer tokens: the same
// scripts and the same checks as TestExampleWalkthrough and
// TestExamplePlan. The scripts take one address; a router in front of the
// planes sends each call to the plane that serves it.
func TestClusterExamples(t *testing.T) {
	requireTools(t, "bash", "curl", "jq")
	url, data := startClusterExamples(t)
	t.Run("walkthrough", func(t *testing.T) {
		checkWalkthrough(t, runExampleAt(t, "walkthrough.sh", url, data))
	})
	t.Run("plan", func(t *testing.T) {
		checkPlan(t, runExampleAt(t, "plan.sh", url, data))
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

// startClusterExamples starts clusterReplicas processes of every plane on
// a new cluster the way the examples want Steward: the example tools,
// bearer tokens in a token file in the data directory, as `steward dev`
// writes it. It returns the router's URL and the data directory, once a
// proposal of an example tool is accepted.
func startClusterExamples(t *testing.T) (string, string) {
	t.Helper()
	b := startClusterBase(t)
	data := t.TempDir()
	b.withTokens(t, data)
	urls := map[string][]string{}
	governance := ""
	for _, p := range clusterServices {
		var args []string
		if p.plane == "execution" {
			args = []string{"--tools", "../examples/tools.json", "--sandbox", filepath.Join(data, "sandbox")}
		}
		for i := range clusterReplicas(t) {
			u := b.startPlane(t, p.plane, replicaNode(p.node, i), governance, nil, args...).url
			urls[p.plane] = append(urls[p.plane], u)
			if p.plane == "governance" {
				governance = u
			}
		}
	}
	router := startPlaneRouter(t, urls)
	// The execution plane registers the example tools on the log as it
	// starts; a proposal of one is refused until the control plane has
	// read them. A probe is a task of its own at each try.
	admin := withToken(router, b.token)
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
	return router, data
}

// planeServices names the Connect services each plane serves (each
// plane's Services in services/*/plane.go); a plane answers the others'
// procedures not found.
var planeServices = map[string][]string{
	"control":    {stewardv1connect.TaskServiceName},
	"governance": {stewardv1connect.GovernanceServiceName},
	"execution":  {stewardv1connect.ToolServiceName, stewardv1connect.ActionServiceName},
	"state":      {stewardv1connect.QueryServiceName, stewardv1connect.AuditServiceName, stewardv1connect.DeadLetterServiceName},
}

// startPlaneRouter serves one address in front of the planes at urls (by
// plane, each plane's replicas): a Connect procedure's path,
// /<service>/<method>, goes to a replica of the plane that serves the
// service, the replicas in turn. HTTP/1.1, as curl speaks it; an unknown
// service is not found. It stands in for `steward gateway`.
func startPlaneRouter(t *testing.T, urls map[string][]string) string {
	t.Helper()
	targets := map[string]*replicas{}
	for plane, services := range planeServices {
		r := &replicas{}
		for _, raw := range urls[plane] {
			u, err := url.Parse(raw)
			if err != nil {
				t.Fatal(err)
			}
			r.urls = append(r.urls, u)
		}
		for _, s := range services {
			targets[s] = r
		}
	}
	proxy := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			service, _, _ := strings.Cut(strings.TrimPrefix(r.In.URL.Path, "/"), "/")
			r.SetURL(targets[service].next())
		},
		FlushInterval: -1, // a watch's messages as they come
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		service, _, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
		if targets[service] == nil {
			http.Error(w, fmt.Sprintf("no plane serves %q", service), http.StatusNotFound)
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// replicas are one plane's processes, taken in turn.
type replicas struct {
	urls []*url.URL
	n    atomic.Uint64
}

func (r *replicas) next() *url.URL { return r.urls[(r.n.Add(1)-1)%uint64(len(r.urls))] }
