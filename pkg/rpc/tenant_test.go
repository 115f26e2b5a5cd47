package rpc_test

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"connectrpc.com/connect"

	"github.com/steward-run/steward/pkg/access"
	"github.com/steward-run/steward/pkg/errs"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/gen/steward/v1/stewardv1connect"
	"github.com/steward-run/steward/pkg/rpc"
)

// TestTenantsAtTheEdge serves TaskService and QueryService, whose handlers
// answer unimplemented, behind the edge with a tenant hook: a task of
// another tenant is not_found for every caller, an admin too, on a unary
// call and a stream alike, in the words of a task that does not exist;
// the caller's own tenant's task reaches the handler.
func TestTenantsAtTheEdge(t *testing.T) {
	tokens := rpc.Tokens{
		"acme-agent-token-0123456789":   {Principal: "agent:a", Tenant: "acme"},
		"globex-agent-token-0123456789": {Principal: "agent:a", Tenant: "globex"},
		"globex-admin-token-0123456789": {Principal: "user:root", Roles: []string{access.Admin}, Tenant: "globex"},
		"default-admin-token-012345678": {Principal: "user:root", Roles: []string{access.Admin}},
	}
	tenants := func(_ context.Context, taskID string) (string, error) {
		if taskID != "t1" {
			return "", errs.New(errs.NotFound, "task %s not found", taskID)
		}
		return "acme", nil
	}
	parties := func(context.Context, string) (access.TaskParties, error) {
		return access.TaskParties{Agents: []string{"agent:a"}}, nil
	}
	opts := rpc.HandlerOptions(slog.New(slog.DiscardHandler), tokens, parties, rpc.WithTenants(tenants))
	mux := http.NewServeMux()
	mux.Handle(stewardv1connect.NewTaskServiceHandler(stewardv1connect.UnimplementedTaskServiceHandler{}, opts...))
	mux.Handle(stewardv1connect.NewQueryServiceHandler(stewardv1connect.UnimplementedQueryServiceHandler{}, opts...))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	ctx := context.Background()
	bearer := func(h http.Header, token string) { h.Set("Authorization", "Bearer "+token) }

	pause := func(token, taskID string) error {
		req := connect.NewRequest(&stewardv1.PauseTaskRequest{TaskId: taskID})
		bearer(req.Header(), token)
		_, err := stewardv1connect.NewTaskServiceClient(srv.Client(), srv.URL).PauseTask(ctx, req)
		return err
	}
	watch := func(token, taskID string) error {
		req := connect.NewRequest(&stewardv1.WatchTaskRequest{TaskId: taskID})
		bearer(req.Header(), token)
		s, err := stewardv1connect.NewQueryServiceClient(srv.Client(), srv.URL).WatchTask(ctx, req)
		if err != nil {
			return err
		}
		defer s.Close()
		for s.Receive() {
		}
		return s.Err()
	}
	for name, call := range map[string]func(token, taskID string) error{"PauseTask": pause, "WatchTask": watch} {
		if err := call("acme-agent-token-0123456789", "t1"); connect.CodeOf(err) != connect.CodeUnimplemented {
			t.Errorf("%s by acme's agent on acme's task: %v; want it to reach the handler", name, err)
		}
		for _, token := range []string{"globex-agent-token-0123456789", "globex-admin-token-0123456789", "default-admin-token-012345678"} {
			other, absent := call(token, "t1"), call(token, "t2")
			if connect.CodeOf(other) != connect.CodeNotFound || connect.CodeOf(absent) != connect.CodeNotFound {
				t.Errorf("%s with %s: acme's task %v, no task %v; want not_found for both", name, token, other, absent)
			}
			var o, a *connect.Error
			if errors.As(other, &o) && errors.As(absent, &a) && o.Message() != "task t1 not found" {
				t.Errorf("%s with %s: acme's task says %q, not the words of a task that does not exist (%q)", name, token, o.Message(), a.Message())
			}
		}
	}
}
