package execution_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"connectrpc.com/connect"

	"github.com/steward-run/steward/pkg/access"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/gen/steward/v1/stewardv1connect"
	"github.com/steward-run/steward/pkg/rpc"
	"github.com/steward-run/steward/pkg/stewardtest"
	"github.com/steward-run/steward/services/execution/breaker"
)

// TestATenantCannotTakeOverAGlobalTool: the default tenant's tools are
// every tenant's, so a tool-admin (or admin) of one tenant may not
// register a new version of one: it would send the other tenants' calls,
// secret values included, wherever its URL says. Found by the review of
// issue 16, when every tool was global.
func TestATenantCannotTakeOverAGlobalTool(t *testing.T) {
	b := newHarness(t, breaker.Config{})
	tokens := rpc.Tokens{
		"platform-tool-admin-0123456789": {Principal: "user:tools", Roles: []string{access.ToolAdmin}},
		"acme-tool-admin-token-01234567": {Principal: "user:tools", Roles: []string{access.ToolAdmin}, Tenant: "acme"},
		"globex-admin-token-0123456789":  {Principal: "user:root", Roles: []string{access.Admin}, Tenant: "globex"},
	}
	mux := http.NewServeMux()
	for _, s := range b.plane.Services(rpc.HandlerOptions(b.Logger, tokens, nil)) {
		mux.Handle(s.Path, s.Handler)
	}
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	ts := startTool(t)
	register := func(token, version string) error {
		c := ts.Contract("wire", callPath)
		c.Version = version
		req := connect.NewRequest(&stewardv1.RegisterToolRequest{Contract: c})
		_, err := stewardv1connect.NewToolServiceClient(srv.Client(), srv.URL, connect.WithInterceptors(stewardtest.Bearer(token))).RegisterTool(context.Background(), req)
		return err
	}
	if err := register("platform-tool-admin-0123456789", "1.0.0"); err != nil {
		t.Fatalf("the default tenant's tool-admin: %v", err)
	}
	for token, version := range map[string]string{"acme-tool-admin-token-01234567": "2.0.0", "globex-admin-token-0123456789": "3.0.0"} {
		if err := register(token, version); connect.CodeOf(err) != connect.CodeAlreadyExists {
			t.Errorf("a tenant's tool-admin registering wire@%s: %v; want already_exists", version, err)
		}
	}
}
