package e2e_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/gen/steward/v1/stewardv1connect"
	"github.com/steward-run/steward/pkg/stewardtest"
)

// TestJWTBearer runs the real binary with --jwt-jwks (a JWKS file made
// here, with a test key), --jwt-issuer and --jwt-audience beside the token
// file: a JWT's principal and roles pass the role table as a token file's
// do; every bad token is unauthenticated and says why; a JWT whose roles
// are not enough is permission_denied; each denial is counted in
// steward_rpc_denied_total.
func TestJWTBearer(t *testing.T) {
	const issuer = "https://id.example.test"
	idp := stewardtest.NewJWTIssuer(t, issuer, "steward", "e2e-key")
	h := startSteward(t, setup{flags: []string{
		"--jwt-jwks", idp.WriteJWKS(t, t.TempDir()), "--jwt-issuer", issuer, "--jwt-audience", "steward",
	}})
	ctx := context.Background()
	as := func(principal string, roles ...string) authed {
		return withToken(h.url, idp.Sign(t, idp.Claims(principal, roles...)))
	}

	var taskID string
	t.Run("a valid JWT with roles works", func(t *testing.T) {
		agent := as("agent:jwt")
		taskID = createTask(t, agent.clients, "jwt-1").Contract.TaskId
		waitStarted(t, agent.clients, taskID)
		if _, err := as("user:jwt-ops", "operator").tasks.PauseTask(ctx, connect.NewRequest(&stewardv1.PauseTaskRequest{TaskId: taskID, Reason: "maintenance"})); err != nil {
			t.Fatalf("PauseTask by an operator's JWT: %v", err)
		}
		tk := waitStatus(t, agent.clients, taskID, stewardv1.TaskStatus_TASK_STATUS_PAUSED)
		if got := tk.Contract.GetRequesterRef(); got == "" {
			t.Fatal("the task has no requester")
		}
		// The token file still answers beside the JWTs.
		if _, err := h.operator.tasks.ResumeTask(ctx, connect.NewRequest(&stewardv1.ResumeTaskRequest{TaskId: taskID})); err != nil {
			t.Fatalf("ResumeTask with the token file's operator token: %v", err)
		}
	})

	t.Run("a JWT whose roles are not enough is permission_denied", func(t *testing.T) {
		_, err := as("user:jwt-audit", "auditor").tasks.RaiseBudget(ctx, connect.NewRequest(&stewardv1.RaiseBudgetRequest{TaskId: taskID, MaxCostMicros: 5000, Reason: "more"}))
		if connect.CodeOf(err) != connect.CodePermissionDenied || !strings.Contains(err.Error(), "user:jwt-audit") || !strings.Contains(err.Error(), "budget-owner") {
			t.Fatalf("RaiseBudget by an auditor's JWT: %v, want permission_denied naming the caller and the role", err)
		}
	})

	other := stewardtest.NewJWK(t, "ES256", "e2e-key") // same kid, another key
	unknown := stewardtest.NewJWK(t, "ES256", "elsewhere")
	claims := func(change func(map[string]any)) map[string]any {
		c := idp.Claims("agent:jwt")
		change(c)
		return c
	}
	refused := []struct{ name, token, says string }{
		{"expired", idp.Sign(t, claims(func(c map[string]any) { c["exp"] = time.Now().Add(-time.Hour).Unix() })), "expired"},
		{"not yet valid", idp.Sign(t, claims(func(c map[string]any) { c["nbf"] = time.Now().Add(time.Hour).Unix() })), "not valid yet"},
		{"wrong audience", idp.Sign(t, claims(func(c map[string]any) { c["aud"] = "billing" })), "audience"},
		{"wrong issuer", idp.Sign(t, claims(func(c map[string]any) { c["iss"] = "https://evil.example.test" })), "issuer"},
		{"unknown key id", stewardtest.SignJWT(t, unknown, "ES256", idp.Claims("agent:jwt")), "key id"},
		{"alg none", stewardtest.UnsignedJWT(t, "e2e-key", idp.Claims("user:root", "admin")), `alg "none"`},
		{"an alg the key does not allow", stewardtest.SignJWT(t, stewardtest.NewJWK(t, "RS256", "e2e-key"), "RS256", idp.Claims("agent:jwt")), "not allowed by key"},
		{"bad signature", stewardtest.SignJWT(t, other, "ES256", idp.Claims("agent:jwt")), "signature"},
		{"malformed", "bm90.anNvbg.c2ln", "not a well-formed JWT"},
		{"neither a JWT nor a known token", "no-such-token-0123456789", "a valid bearer token is required"},
	}
	t.Run("each bad token is unauthenticated", func(t *testing.T) {
		for _, c := range refused {
			_, err := withToken(h.url, c.token).query.ListTasks(ctx, connect.NewRequest(&stewardv1.ListTasksRequest{}))
			if connect.CodeOf(err) != connect.CodeUnauthenticated || !strings.Contains(err.Error(), c.says) {
				t.Errorf("%s: %v, want unauthenticated saying %q", c.name, err, c.says)
			}
		}
	})

	t.Run("denied calls are counted", func(t *testing.T) {
		m := scrape(t, h.url)
		if got, want := m[`steward_rpc_denied_total{code="unauthenticated",procedure="/steward.v1.QueryService/ListTasks"}`], float64(len(refused)); got != want {
			t.Errorf("unauthenticated ListTasks counted %v, want %v", got, want)
		}
		if got := m[`steward_rpc_denied_total{code="permission_denied",procedure="/steward.v1.TaskService/RaiseBudget"}`]; got != 1 {
			t.Errorf("permission_denied RaiseBudget counted %v, want 1", got)
		}
	})
}

// TestJWTFromAnOIDCIssuer runs the binary with --jwt-issuer alone: it
// finds the keys through the issuer's discovery document (an httptest
// server here) and takes the tokens they sign, for that issuer only.
func TestJWTFromAnOIDCIssuer(t *testing.T) {
	idp := stewardtest.NewJWTIssuer(t, "", "steward", "oidc-key")
	url := idp.ServeOIDC(t)
	h := startSteward(t, setup{flags: []string{"--jwt-issuer", url, "--jwt-audience", "steward"}})
	ctx := context.Background()
	if _, err := withToken(h.url, idp.Sign(t, idp.Claims("agent:oidc"))).query.ListTasks(ctx, connect.NewRequest(&stewardv1.ListTasksRequest{})); err != nil {
		t.Fatalf("a token of the issuer: %v", err)
	}
	c := idp.Claims("agent:oidc")
	c["iss"] = "https://elsewhere.example.test"
	if _, err := withToken(h.url, idp.Sign(t, c)).query.ListTasks(ctx, connect.NewRequest(&stewardv1.ListTasksRequest{})); connect.CodeOf(err) != connect.CodeUnauthenticated {
		t.Fatalf("a token naming another issuer: %v, want unauthenticated", err)
	}
}

// TestTLSAPI serves the API over TLS with a certificate of a test CA: a
// Connect client and a gRPC client (HTTP/2) that trust the CA call it; a
// client that does not is refused the connection; the CLI trusts it with
// --ca.
func TestTLSAPI(t *testing.T) {
	dir := t.TempDir()
	pki := newTestPKI(t, filepath.Join(dir, "pki"))
	p := startBinary(t, filepath.Join(dir, "data"), "--auth", writeFile(t, dir, "tokens.json", tokensFile),
		"--tls-cert", pki.serverCert, "--tls-key", pki.serverKey)
	if !strings.HasPrefix(p.url, "https://") {
		t.Fatalf("steward says it serves %s, want https://", p.url)
	}
	caPEM, err := os.ReadFile(pki.ca)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(caPEM)
	trusting := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}, ForceAttemptHTTP2: true}}
	ctx := context.Background()
	for name, opts := range map[string][]connect.ClientOption{"connect": nil, "grpc": {connect.WithGRPC()}} {
		q := stewardv1connect.NewQueryServiceClient(trusting, p.url, append(opts, connect.WithInterceptors(stewardtest.Bearer(agentToken)))...)
		if _, err := q.ListTasks(ctx, connect.NewRequest(&stewardv1.ListTasksRequest{})); err != nil {
			t.Fatalf("%s over TLS: %v", name, err)
		}
	}
	untrusting := stewardv1connect.NewQueryServiceClient(&http.Client{Timeout: 30 * time.Second}, p.url, connect.WithInterceptors(stewardtest.Bearer(agentToken)))
	if _, err := untrusting.ListTasks(ctx, connect.NewRequest(&stewardv1.ListTasksRequest{})); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("a client without the CA: %v, want a certificate error", err)
	}

	out, err := exec.Command(binary, "audit", "key", "--addr", p.url, "--ca", pki.ca, "--token", agentToken).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "PUBLIC KEY") {
		t.Fatalf("steward audit key --ca: %v\n%s", err, out)
	}
	out, err = exec.Command(binary, "audit", "key", "--addr", p.url, "--token", agentToken).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "certificate") {
		t.Fatalf("steward audit key without --ca: %v\n%s, want a certificate error", err, out)
	}
}
