package rpc_test

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"connectrpc.com/connect"

	"github.com/steward-run/steward/pkg/access"
	"github.com/steward-run/steward/pkg/errs"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/gen/steward/v1/stewardv1connect"
	"github.com/steward-run/steward/pkg/rpc"
)

// TestEdgeEnforcesTheRoleTable serves TaskService and ToolService, whose
// handlers answer unimplemented, behind the edge with tokens and a party
// hook: a call the table refuses is permission_denied naming what it
// needs; one it allows reaches the handler (unimplemented).
func TestEdgeEnforcesTheRoleTable(t *testing.T) {
	tokens := rpc.Tokens{
		"agent-token-0123456789":    {Principal: "agent:a"},
		"owner-token-0123456789":    {Principal: "user:owner"},
		"stranger-token-0123456789": {Principal: "user:eve", Roles: []string{"authorizer"}},
		"operator-token-0123456789": {Principal: "user:ops", Roles: []string{access.Operator}},
		"admin-token-0123456789":    {Principal: "user:root", Roles: []string{access.Admin}},
	}
	looked := 0
	parties := func(_ context.Context, taskID string) (access.TaskParties, error) {
		looked++
		if taskID != "t1" {
			return access.TaskParties{}, errs.New(errs.NotFound, "task %s not found", taskID)
		}
		return access.TaskParties{Agents: []string{"agent:a"}, Owners: []string{"user:owner"}}, nil
	}
	opts := rpc.HandlerOptions(slog.New(slog.DiscardHandler), tokens, parties)
	mux := http.NewServeMux()
	mux.Handle(stewardv1connect.NewTaskServiceHandler(stewardv1connect.UnimplementedTaskServiceHandler{}, opts...))
	mux.Handle(stewardv1connect.NewToolServiceHandler(stewardv1connect.UnimplementedToolServiceHandler{}, opts...))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)

	as := func(token string) connect.ClientOption {
		return connect.WithInterceptors(connect.UnaryInterceptorFunc(func(next connect.UnaryFunc) connect.UnaryFunc {
			return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
				req.Header().Set("Authorization", "Bearer "+token)
				return next(ctx, req)
			}
		}))
	}
	pause := func(token, taskID string) error {
		_, err := stewardv1connect.NewTaskServiceClient(srv.Client(), srv.URL, as(token)).
			PauseTask(context.Background(), connect.NewRequest(&stewardv1.PauseTaskRequest{TaskId: taskID}))
		return err
	}
	register := func(token string) error {
		_, err := stewardv1connect.NewToolServiceClient(srv.Client(), srv.URL, as(token)).
			RegisterTool(context.Background(), connect.NewRequest(&stewardv1.RegisterToolRequest{}))
		return err
	}
	passed := connect.CodeUnimplemented
	for _, tc := range []struct {
		name string
		err  error
		want connect.Code
		says []string
	}{
		{"no token", pause("", "t1"), connect.CodeUnauthenticated, nil},
		{"unknown token", pause("no-such-token-0123456789", "t1"), connect.CodeUnauthenticated, nil},
		{"steering: the agent", pause("agent-token-0123456789", "t1"), passed, nil},
		{"steering: an owner", pause("owner-token-0123456789", "t1"), passed, nil},
		{"steering: an operator", pause("operator-token-0123456789", "t1"), passed, nil},
		{"steering: an admin", pause("admin-token-0123456789", "t1"), passed, nil},
		{"steering: a stranger", pause("stranger-token-0123456789", "t1"), connect.CodePermissionDenied,
			[]string{"user:eve may not call TaskService/PauseTask on task t1", "operator role", "agent:a", "user:owner"}},
		{"steering: an unknown task", pause("stranger-token-0123456789", "t2"), connect.CodeNotFound, []string{"task t2 not found"}},
		{"a role: not held", register("agent-token-0123456789"), connect.CodePermissionDenied,
			[]string{"agent:a may not call ToolService/RegisterTool: that needs the tool-admin role"}},
		{"a role: admin", register("admin-token-0123456789"), passed, nil},
	} {
		if got := connect.CodeOf(tc.err); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, tc.err, tc.want)
		}
		for _, w := range tc.says {
			if tc.err == nil || !strings.Contains(tc.err.Error(), w) {
				t.Errorf("%s: %v, want it to say %q", tc.name, tc.err, w)
			}
		}
	}
	// Roles decide first: the hook is asked only when they were not
	// enough — the agent, the owner, the stranger twice.
	if looked != 4 {
		t.Errorf("the party hook was asked %d times, want 4", looked)
	}
}

// createdMeanwhile is a TaskService whose PauseTask finds task t2, as a
// command does when the task is created between the edge's look at its
// parties and the command's own read of it.
type createdMeanwhile struct {
	stewardv1connect.UnimplementedTaskServiceHandler
}

func (createdMeanwhile) PauseTask(context.Context, *connect.Request[stewardv1.PauseTaskRequest]) (*connect.Response[stewardv1.PauseTaskResponse], error) {
	return connect.NewResponse(&stewardv1.PauseTaskResponse{}), nil
}

// TestAnUnknownTaskIsNotAPass: a party rule on a task the hook does not
// know answers not_found at the edge. Letting the call through, for the
// command to report, would let a stranger's call act on a task created in
// the moment between the two reads.
func TestAnUnknownTaskIsNotAPass(t *testing.T) {
	tokens := rpc.Tokens{"stranger-token-0123456789": {Principal: "user:eve"}}
	parties := func(_ context.Context, taskID string) (access.TaskParties, error) {
		return access.TaskParties{}, errs.New(errs.NotFound, "task %s not found", taskID)
	}
	mux := http.NewServeMux()
	mux.Handle(stewardv1connect.NewTaskServiceHandler(createdMeanwhile{}, rpc.HandlerOptions(slog.New(slog.DiscardHandler), tokens, parties)...))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	req := connect.NewRequest(&stewardv1.PauseTaskRequest{TaskId: "t2"})
	req.Header().Set("Authorization", "Bearer stranger-token-0123456789")
	_, err := stewardv1connect.NewTaskServiceClient(srv.Client(), srv.URL).PauseTask(context.Background(), req)
	if connect.CodeOf(err) != connect.CodeNotFound || !strings.Contains(err.Error(), "task t2 not found") {
		t.Fatalf("a stranger's call on a task the hook does not know: %v, want not_found from the edge", err)
	}
}

// TestEveryProtocolMeetsTheTable: the table is applied to gRPC and
// gRPC-Web calls as to Connect's, and to Connect's GET: one edge for all.
func TestEveryProtocolMeetsTheTable(t *testing.T) {
	tokens := rpc.Tokens{"agent-token-0123456789": {Principal: "agent:a"}}
	opts := rpc.HandlerOptions(slog.New(slog.DiscardHandler), tokens, nil)
	mux := http.NewServeMux()
	mux.Handle(stewardv1connect.NewToolServiceHandler(stewardv1connect.UnimplementedToolServiceHandler{}, opts...))
	mux.Handle(stewardv1connect.NewQueryServiceHandler(stewardv1connect.UnimplementedQueryServiceHandler{}, opts...))
	srv := httptest.NewUnstartedServer(mux)
	srv.EnableHTTP2 = true
	srv.StartTLS()
	t.Cleanup(srv.Close)
	for name, protocol := range map[string]connect.ClientOption{
		"connect": connect.WithProtoJSON(), "grpc": connect.WithGRPC(), "grpc-web": connect.WithGRPCWeb(),
	} {
		for token, want := range map[string]connect.Code{"": connect.CodeUnauthenticated, "agent-token-0123456789": connect.CodePermissionDenied} {
			req := connect.NewRequest(&stewardv1.RegisterToolRequest{})
			if token != "" {
				req.Header().Set("Authorization", "Bearer "+token)
			}
			_, err := stewardv1connect.NewToolServiceClient(srv.Client(), srv.URL, protocol).RegisterTool(context.Background(), req)
			if connect.CodeOf(err) != want {
				t.Errorf("%s, token %q: RegisterTool: %v, want %v", name, token, err, want)
			}
		}
	}
	// A GET (a query without side effects) passes the same edge.
	_, err := stewardv1connect.NewQueryServiceClient(srv.Client(), srv.URL, connect.WithHTTPGet()).
		GetTask(context.Background(), connect.NewRequest(&stewardv1.GetTaskRequest{TaskId: "t1"}))
	if connect.CodeOf(err) != connect.CodeUnauthenticated {
		t.Errorf("GET GetTask without a token: %v, want unauthenticated", err)
	}
}

// TestEdgeLetsAPublicProcedureThroughWithoutAToken serves GovernanceService,
// whose handlers answer unimplemented, behind the edge with tokens:
// GetCredentialKey (public) reaches its handler without a token, and is
// refused a token the server does not know; ListApprovals (anyone
// authenticated) is refused without one.
func TestEdgeLetsAPublicProcedureThroughWithoutAToken(t *testing.T) {
	tokens := rpc.Tokens{"agent-token-0123456789": {Principal: "agent:a"}}
	mux := http.NewServeMux()
	mux.Handle(stewardv1connect.NewGovernanceServiceHandler(stewardv1connect.UnimplementedGovernanceServiceHandler{},
		rpc.HandlerOptions(slog.New(slog.DiscardHandler), tokens, nil)...))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	client := stewardv1connect.NewGovernanceServiceClient(srv.Client(), srv.URL)
	ctx := context.Background()

	_, err := client.GetCredentialKey(ctx, connect.NewRequest(&stewardv1.GetCredentialKeyRequest{}))
	if connect.CodeOf(err) != connect.CodeUnimplemented {
		t.Errorf("GetCredentialKey without a token: %v, want it to reach the handler (unimplemented)", err)
	}
	req := connect.NewRequest(&stewardv1.GetCredentialKeyRequest{})
	req.Header().Set("Authorization", "Bearer no-such-token-0123456789")
	if _, err := client.GetCredentialKey(ctx, req); connect.CodeOf(err) != connect.CodeUnauthenticated {
		t.Errorf("GetCredentialKey with an unknown token: %v, want unauthenticated", err)
	}
	_, err = client.ListApprovals(ctx, connect.NewRequest(&stewardv1.ListApprovalsRequest{}))
	if connect.CodeOf(err) != connect.CodeUnauthenticated {
		t.Errorf("ListApprovals without a token: %v, want unauthenticated", err)
	}
}
