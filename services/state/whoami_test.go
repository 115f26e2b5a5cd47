package state_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"

	"connectrpc.com/connect"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/gen/steward/v1/stewardv1connect"
	"github.com/steward-run/steward/pkg/rpc"
	"github.com/steward-run/steward/pkg/stewardtest"
	"github.com/steward-run/steward/services/state"
)

// TestWhoAmI: with tokens, the caller is who its token says, roles and
// tenant included, and authenticated; in the open mode, whom the
// Steward-Principal header names (anonymous without it), with no roles and
// not authenticated; a token nobody issued is refused before the answer.
func TestWhoAmI(t *testing.T) {
	env := stewardtest.NewEnv(t)
	p := startPlane(t, env.Log, env.Logger, state.Config{})
	serve := func(tokens rpc.Tokens) stewardv1connect.QueryServiceClient {
		mux := http.NewServeMux()
		for _, s := range p.Services(rpc.HandlerOptions(env.Logger, tokens, nil)) {
			mux.Handle(s.Path, s.Handler)
		}
		srv := httptest.NewServer(mux)
		t.Cleanup(srv.Close)
		return stewardv1connect.NewQueryServiceClient(http.DefaultClient, srv.URL)
	}
	ask := func(c stewardv1connect.QueryServiceClient, header, value string) (*stewardv1.WhoAmIResponse, error) {
		req := connect.NewRequest(&stewardv1.WhoAmIRequest{})
		if header != "" {
			req.Header().Set(header, value)
		}
		resp, err := c.WhoAmI(context.Background(), req)
		if err != nil {
			return nil, err
		}
		return resp.Msg, nil
	}

	authed := serve(rpc.Tokens{"bo-token-0123456789": {Principal: "user:bo", Roles: []string{"authorizer"}, Tenant: "acme"}})
	if who, err := ask(authed, "Authorization", "Bearer bo-token-0123456789"); err != nil || who.Principal != "user:bo" ||
		!slices.Equal(who.Roles, []string{"authorizer"}) || who.Tenant != "acme" || !who.Authenticated {
		t.Errorf("with bo's token: %v %v", who, err)
	}
	if _, err := ask(authed, "Authorization", "Bearer nobody-0123456789"); connect.CodeOf(err) != connect.CodeUnauthenticated {
		t.Errorf("with a token nobody issued: %v, want unauthenticated", err)
	}

	open := serve(nil)
	if who, err := ask(open, rpc.PrincipalHeader, "user:ana"); err != nil || who.Principal != "user:ana" || len(who.Roles) != 0 || who.Authenticated {
		t.Errorf("open, as user:ana: %v %v", who, err)
	}
	if who, err := ask(open, "", ""); err != nil || who.Principal != "anonymous" || who.Authenticated {
		t.Errorf("open, naming nobody: %v %v", who, err)
	}
}
