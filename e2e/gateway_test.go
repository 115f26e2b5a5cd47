package e2e_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/known/emptypb"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/steward-run/steward/cmd/steward/app"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/gen/steward/v1/stewardv1connect"
	"github.com/steward-run/steward/pkg/stewardtest"
)

// addr is the HOST:PORT a process serves on.
func (p *proc) addr() string {
	return strings.TrimPrefix(strings.TrimPrefix(p.url, "http://"), "https://")
}

// replicasOf is one replica per plane, from each plane's URL.
func replicasOf(planes map[string]string) map[string][]string {
	replicas := map[string][]string{}
	for plane, url := range planes {
		replicas[plane] = []string{url}
	}
	return replicas
}

// startGateway starts `steward gateway`, the real binary, in front of the
// planes' replicas (URLs by plane), checking them every 200 ms, and
// returns it once its /readyz says every replica is healthy.
func startGateway(t *testing.T, replicas map[string][]string) *proc {
	t.Helper()
	args := []string{"gateway", "--addr", "127.0.0.1:0", "--log-level", "warn", "--health-check-every", "200ms"}
	for _, r := range app.PlaneRoutes() {
		args = append(args, "--"+r.Plane, strings.Join(replicas[r.Plane], ","))
	}
	p := startCommand(t, nil, args...)
	stewardtest.Eventually(t, 20*time.Second, func() (bool, string) {
		resp, err := http.Get(p.url + "/readyz")
		if err != nil {
			return false, err.Error()
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		every := !strings.Contains(string(body), " down since ") && !strings.Contains(string(body), " not checked")
		return resp.StatusCode == http.StatusOK && every, fmt.Sprintf("/readyz: %s\n%s", resp.Status, body)
	})
	return p
}

// h2c is a client that speaks cleartext HTTP/2 only, as gRPC clients do.
func h2c() *http.Client {
	var p http.Protocols
	p.SetUnencryptedHTTP2(true)
	return &http.Client{Transport: &http.Transport{Protocols: &p}, Timeout: 30 * time.Second}
}

// checkEveryProcedure calls every procedure of every Steward service, as
// the descriptors compiled into the binary list them, with an empty
// request and the admin's token: through the gateway over Connect
// (HTTP/1.1) and gRPC (HTTP/2), and directly at the plane PlaneRoutes
// names. Each must answer the same code all three ways, and never
// unimplemented or the gateway's not_found: the call reached its plane.
func checkEveryProcedure(t *testing.T, gatewayURL string, planes map[string]string, token string) {
	t.Helper()
	owner := map[protoreflect.FullName]string{}
	for _, r := range app.PlaneRoutes() {
		for _, s := range r.Services {
			owner[protoreflect.FullName(s)] = planes[r.Plane]
		}
	}
	auth := connect.WithInterceptors(stewardtest.Bearer(token))
	services, procedures := 0, 0
	protoregistry.GlobalFiles.RangeFilesByPackage("steward.v1", func(fd protoreflect.FileDescriptor) bool {
		for i := range fd.Services().Len() {
			sd := fd.Services().Get(i)
			services++
			direct := owner[sd.FullName()]
			if direct == "" {
				t.Errorf("no plane serves %s (app.PlaneRoutes)", sd.FullName())
				continue
			}
			for j := range sd.Methods().Len() {
				md := sd.Methods().Get(j)
				procedure := "/" + string(sd.FullName()) + "/" + string(md.Name())
				procedures++
				want := connect.CodeOf(callEmpty(http.DefaultClient, direct+procedure, md, auth))
				for _, via := range []struct {
					name string
					err  error
				}{
					{"Connect", callEmpty(http.DefaultClient, gatewayURL+procedure, md, auth)},
					{"gRPC", callEmpty(h2c(), gatewayURL+procedure, md, auth, connect.WithGRPC())},
				} {
					got := connect.CodeOf(via.err)
					if via.err != nil && (got == connect.CodeUnimplemented || strings.Contains(via.err.Error(), "no Steward service")) || got != want {
						t.Errorf("%s over %s through the gateway: %v (%s); directly at its plane: %s", procedure, via.name, via.err, got, want)
					}
				}
			}
		}
		return true
	})
	if services < 7 || procedures < 40 {
		t.Fatalf("walked %d procedures of %d services: the descriptors are not all there", procedures, services)
	}
	t.Logf("%d procedures of %d services answered through the gateway as their planes do", procedures, services)
}

// callEmpty calls the procedure at url with an empty request message, and
// reads a stream to its end; it returns the call's error.
func callEmpty(hc *http.Client, url string, md protoreflect.MethodDescriptor, opts ...connect.ClientOption) error {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c := connect.NewClient[emptypb.Empty, emptypb.Empty](hc, url, opts...)
	if !md.IsStreamingServer() {
		_, err := c.CallUnary(ctx, connect.NewRequest(&emptypb.Empty{}))
		return err
	}
	s, err := c.CallServerStream(ctx, connect.NewRequest(&emptypb.Empty{}))
	if err != nil {
		return err
	}
	defer s.Close()
	for s.Receive() {
	}
	return s.Err()
}

// checkGatewayReflection lists the services through the gateway with
// grpcurl, as docs/tour.md does at a plane: every Steward service is
// there; and grpcurl, which learns a method from reflection, calls one.
func checkGatewayReflection(t *testing.T, addr, token string) {
	t.Helper()
	grpcurl := pinnedTool(t, "grpcurl")
	out, err := exec.Command(grpcurl, "-plaintext", addr, "list").CombinedOutput()
	if err != nil {
		t.Fatalf("grpcurl list: %v\n%s", err, out)
	}
	call, err := exec.Command(grpcurl, "-plaintext", "-H", "Authorization: Bearer "+token, "-d", `{"page_size": 1}`, addr, "steward.v1.QueryService/ListTasks").CombinedOutput()
	if err != nil || !strings.Contains(string(call), `"tasks"`) {
		t.Errorf("grpcurl ListTasks through the gateway: %v\n%s", err, call)
	}
	listed := map[string]bool{}
	for _, line := range strings.Fields(string(out)) {
		listed[line] = true
	}
	for _, r := range app.PlaneRoutes() {
		for _, s := range r.Services {
			if !listed[s] {
				t.Errorf("grpcurl list through the gateway does not list %s:\n%s", s, out)
			}
		}
	}
}

// forgedIdentity are headers a caller might hope a gateway or a plane
// takes for who is calling: the open mode's Steward-Principal, the
// proxies' X-Forwarded-* and Forwarded, and the names auth proxies use.
var forgedIdentity = map[string]string{
	"Steward-Principal":        "user:approver",
	"X-Steward-Principal":      "user:approver",
	"Steward-Roles":            "admin",
	"X-Forwarded-For":          "127.0.0.1",
	"X-Forwarded-User":         "user:approver",
	"X-Forwarded-Email":        "approver@example.com",
	"X-Forwarded-Host":         "localhost",
	"Forwarded":                "for=127.0.0.1;by=steward",
	"X-Remote-User":            "user:approver",
	"X-Auth-Request-User":      "user:approver",
	"X-Real-Ip":                "127.0.0.1",
	"Proxy-Authorization":      "Bearer e2e-cluster-token-0-user-admin",
	"Impersonate-User":         "user:approver",
	"X-Original-Authorization": "Bearer e2e-cluster-token-2-user-approver",
}

// checkForgedIdentity has the agent, with its own token, send every
// forgedIdentity header through the gateway: it keeps exactly the agent's
// rights. The task it creates is recorded as the agent's, and its
// DecideApproval of an action waiting for an approver is
// permission_denied, where the approver's own token is taken.
func checkForgedIdentity(t *testing.T, gatewayURL, data string) {
	t.Helper()
	forge := connect.WithInterceptors(connect.UnaryInterceptorFunc(func(next connect.UnaryFunc) connect.UnaryFunc {
		return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
			for k, v := range forgedIdentity {
				req.Header().Set(k, v)
			}
			return next(ctx, req)
		}
	}))
	agentToken, approverToken := dataToken(t, data, "agent:dev"), dataToken(t, data, "user:approver")
	agent := withToken(gatewayURL, agentToken)
	forged := stewardv1connect.NewGovernanceServiceClient(http.DefaultClient, gatewayURL, connect.WithInterceptors(stewardtest.Bearer(agentToken)), forge)
	forgedTasks := stewardv1connect.NewTaskServiceClient(http.DefaultClient, gatewayURL, connect.WithInterceptors(stewardtest.Bearer(agentToken)), forge)
	k := contract()
	k.AllowedTools, k.AuthorizerRef, k.RequesterRef = []string{"publish"}, "user:approver", "agent:dev"
	k.RiskTier = stewardv1.RiskTier_RISK_TIER_MEDIUM
	created, err := forgedTasks.CreateTask(context.Background(), connect.NewRequest(&stewardv1.CreateTaskRequest{RequestId: "forged-1", Contract: k}))
	if err != nil {
		t.Fatal(err)
	}
	taskID := created.Msg.Task.Contract.TaskId
	params, _ := structpb.NewStruct(map[string]any{"path": "reports/forged.md", "content": "forged"})
	if _, err := forgedTasks.ProposeAction(context.Background(), connect.NewRequest(&stewardv1.ProposeActionRequest{
		TaskId: taskID, ProposalId: "publish-1", Tool: "publish", Target: "shared-drive", Params: params,
		Rationale: &stewardv1.ActionRationale{ExpectedImpact: "a report", RollbackPlan: "a correction"},
	})); err != nil {
		t.Fatal(err)
	}
	timeline, err := agent.query.GetTimeline(context.Background(), connect.NewRequest(&stewardv1.GetTimelineRequest{TaskId: taskID}))
	if err != nil {
		t.Fatal(err)
	}
	if e := timeline.Msg.Entries; len(e) == 0 || e[0].Actor != "agent:dev via control" {
		t.Fatalf("the task the agent created with forged headers is recorded as %v, want agent:dev's", e)
	}
	approver := withToken(gatewayURL, approverToken)
	var approval *stewardv1.Approval
	stewardtest.Eventually(t, 20*time.Second, func() (bool, string) {
		resp, err := approver.governance.ListApprovals(context.Background(), connect.NewRequest(&stewardv1.ListApprovalsRequest{TaskId: taskID, PendingOnly: true}))
		if err == nil && len(resp.Msg.Approvals) > 0 {
			approval = resp.Msg.Approvals[0]
			return true, ""
		}
		return false, fmt.Sprintf("no pending approval yet (%v)", err)
	})
	decide := &stewardv1.DecideApprovalRequest{ApprovalId: approval.ApprovalId, ActionHash: approval.ActionHash, Decision: stewardv1.ApprovalDecision_APPROVAL_DECISION_APPROVE}
	if _, err := forged.DecideApproval(context.Background(), connect.NewRequest(decide)); connect.CodeOf(err) != connect.CodePermissionDenied {
		t.Fatalf("the agent with forged identity headers decided an approval: %v, want permission_denied", err)
	}
	if _, err := approver.governance.DecideApproval(context.Background(), connect.NewRequest(decide)); err != nil {
		t.Fatalf("the approver's own decision through the gateway: %v", err)
	}
}

// dataToken is the token of principal in the token file in data.
func dataToken(t *testing.T, data, principal string) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(data, "tokens.json"))
	if err != nil {
		t.Fatal(err)
	}
	var file struct {
		Tokens []struct{ Token, Principal string }
	}
	if err := json.Unmarshal(raw, &file); err != nil {
		t.Fatal(err)
	}
	for _, tk := range file.Tokens {
		if tk.Principal == principal {
			return tk.Token
		}
	}
	t.Fatalf("no token of %s in %s", principal, data)
	return ""
}
