package app

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	"connectrpc.com/connect"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/gen/steward/v1/stewardv1connect"
)

// TestTheCLIFollowsNoRedirect: a server that answers a redirect (307
// keeps the method and the body) would have the CLI send its bearer token,
// and the request, to wherever it points.
func TestTheCLIFollowsNoRedirect(t *testing.T) {
	var leaked atomic.Value
	leaked.Store("")
	elsewhere := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		leaked.Store(r.Header.Get("Authorization"))
	}))
	t.Cleanup(elsewhere.Close)
	redirecting := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, elsewhere.URL+r.URL.Path, http.StatusTemporaryRedirect)
	}))
	t.Cleanup(redirecting.Close)

	resp, err := httpClient("cli-token-0123456789", nil).Post(redirecting.URL+"/steward.v1.QueryService/GetReceipt", "application/json", strings.NewReader(`{}`))
	if err == nil {
		resp.Body.Close()
	}
	if got := leaked.Load().(string); got != "" {
		t.Fatalf("the redirect's target got %q", got)
	}
	if err == nil || !strings.Contains(err.Error(), "redirect") {
		t.Fatalf("a redirect: %v, want an error that says so", err)
	}
}

// TestTheCLISendsTheDevTokenOnlyToItsServer: the CLI, run where `steward
// dev` keeps its data directory, sends the admin token it finds there to
// the dev server that owns that directory, and to nothing else that
// listens on a loopback port: not a stranger's listener, not one that
// relays the challenge to the real server. Neither receives a token.
func TestTheCLISendsTheDevTokenOnlyToItsServer(t *testing.T) {
	t.Chdir(t.TempDir())
	t.Setenv(TokenEnv, "")
	m := NewServer(io.Discard, io.Discard)
	if err := m.ParseFlags("dev", []string{"--addr", "127.0.0.1:0", "--log-level", "error"}); err != nil {
		t.Fatal(err)
	}
	if err := m.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Close)
	list := func(base string) error {
		client := stewardv1connect.NewQueryServiceClient(httpClient("", nil), base)
		_, err := client.ListTasks(context.Background(), connect.NewRequest(&stewardv1.ListTasksRequest{}))
		return err
	}
	if err := list(m.URL()); err != nil {
		t.Fatalf("the CLI to its own dev server: %v", err)
	}

	real, err := url.Parse(m.URL())
	if err != nil {
		t.Fatal(err)
	}
	for name, answer := range map[string]http.Handler{
		"a stranger":       http.NotFoundHandler(),
		"a relay":          httputil.NewSingleHostReverseProxy(real),
		"a forged address": forgedIdentity(),
	} {
		var seen atomic.Value
		seen.Store("")
		fake := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if a := r.Header.Get("Authorization"); a != "" {
				seen.Store(a)
			}
			answer.ServeHTTP(w, r)
		}))
		err := list(fake.URL)
		fake.Close()
		if got := seen.Load().(string); got != "" {
			t.Errorf("%s on a loopback port received %q", name, got)
		}
		if err == nil || !strings.Contains(err.Error(), "--token") {
			t.Errorf("%s: %v; want a refusal naming --token", name, err)
		}
	}
}

// forgedIdentity answers the challenge with its own address and a proof
// made without the data directory's key.
func forgedIdentity() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		addr := r.Context().Value(http.LocalAddrContextKey).(net.Addr).String()
		_ = json.NewEncoder(w).Encode(identity{Addr: addr, Proof: identityProof(make([]byte, 32), addr, r.URL.Query().Get("nonce"))})
	})
}
