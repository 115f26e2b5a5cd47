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

// clusterServices is where each plane runs in a deployment of one process
// per plane: spread over the nodes, so that a plane's reads go through
// another node than the writes it reacts to.
var clusterServices = []struct {
	plane string
	node  int
}{
	{"control", 0}, {"governance", 1}, {"execution", 2}, {"state", 1},
}

// startClusterExamples starts the planes on a new cluster the way the
// examples want Steward: the example tools, bearer tokens in a token file
// in the data directory, as `steward dev` writes it. It returns the
// router's URL and the data directory, once a proposal of an example tool
// is accepted.
func startClusterExamples(t *testing.T) (string, string) {
	t.Helper()
	b := startClusterBase(t)
	data := t.TempDir()
	b.withTokens(t, data)
	urls := map[string]string{}
	for _, p := range clusterServices {
		var args []string
		if p.plane == "execution" {
			args = []string{"--tools", "../examples/tools.json", "--sandbox", filepath.Join(data, "sandbox")}
		}
		urls[p.plane] = b.startPlane(t, p.plane, p.node, urls["governance"], nil, args...).url
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
// plane): a Connect procedure's path, /<service>/<method>, goes to the
// plane that serves the service. HTTP/1.1, as curl speaks it; an unknown
// service is not found.
func startPlaneRouter(t *testing.T, urls map[string]string) string {
	t.Helper()
	targets := map[string]*url.URL{}
	for plane, services := range planeServices {
		u, err := url.Parse(urls[plane])
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range services {
			targets[s] = u
		}
	}
	proxy := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			service, _, _ := strings.Cut(strings.TrimPrefix(r.In.URL.Path, "/"), "/")
			r.SetURL(targets[service])
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
