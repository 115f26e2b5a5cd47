package rpc_test

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"connectrpc.com/connect"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/steward-run/steward/pkg/access"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/gen/steward/v1/stewardv1connect"
	"github.com/steward-run/steward/pkg/rpc"
)

// TestRevokingATaskCredentialIsTheEdgesRefusal: revoking a task's
// credential needs the operator role, refused at the edge — logged and
// counted as every role refusal (docs/auth.md, "denied calls") — while a
// request naming a schedule goes on to governance, which lets the
// schedule's creator through.
func TestRevokingATaskCredentialIsTheEdgesRefusal(t *testing.T) {
	tokens := rpc.Tokens{
		"stranger-token-0123456789": {Principal: "user:eve"},
		"operator-token-0123456789": {Principal: "user:ops", Roles: []string{access.Operator}},
	}
	denied := rpc.NewDeniedCounter()
	opts := rpc.HandlerOptions(slog.New(slog.DiscardHandler), tokens, nil, rpc.WithDenied(denied))
	mux := http.NewServeMux()
	mux.Handle(stewardv1connect.NewGovernanceServiceHandler(stewardv1connect.UnimplementedGovernanceServiceHandler{}, opts...))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	revoke := func(token string, req *stewardv1.RevokeCredentialRequest) connect.Code {
		r := connect.NewRequest(req)
		r.Header().Set("Authorization", "Bearer "+token)
		_, err := stewardv1connect.NewGovernanceServiceClient(srv.Client(), srv.URL).RevokeCredential(context.Background(), r)
		return connect.CodeOf(err)
	}
	for _, tc := range []struct {
		name  string
		token string
		req   *stewardv1.RevokeCredentialRequest
		want  connect.Code
	}{
		{"a task's, by a stranger", "stranger-token-0123456789", &stewardv1.RevokeCredentialRequest{TaskId: "t1", Reason: "r"}, connect.CodePermissionDenied},
		{"a task's, by an operator", "operator-token-0123456789", &stewardv1.RevokeCredentialRequest{TaskId: "t1", Reason: "r"}, connect.CodeUnimplemented},
		{"a schedule's, by anyone known", "stranger-token-0123456789", &stewardv1.RevokeCredentialRequest{ScheduleId: "s1", Reason: "r"}, connect.CodeUnimplemented},
	} {
		if got := revoke(tc.token, tc.req); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
	if got := testutil.ToFloat64(denied.WithLabelValues(stewardv1connect.GovernanceServiceRevokeCredentialProcedure, "permission_denied")); got != 1 {
		t.Errorf("steward_rpc_denied_total counted %v refusals, want 1", got)
	}
}
