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
	"os"
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
// relays the challenge to the real server — on another port, or on the
// real server's port on the other loopback family, which `localhost`
// reaches first. None receives a token.
func TestTheCLISendsTheDevTokenOnlyToItsServer(t *testing.T) {
	t.Chdir(t.TempDir())
	t.Setenv(TokenEnv, "")
	first, other := loopbackFamilies(t)
	m := NewServer(io.Discard, io.Discard)
	devAddr := "127.0.0.1:0"
	if other != "" {
		// The real server where localhost does not dial first: a relay
		// takes the address it does.
		devAddr = net.JoinHostPort(other, "0")
	}
	if err := m.ParseFlags("dev", []string{"--addr", devAddr, "--log-level", "error"}); err != nil {
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
	relay := httputil.NewSingleHostReverseProxy(real)
	for _, c := range []struct {
		name   string
		answer http.Handler
		listen string // "": no IPv6 loopback here
		dial   string // the host the CLI is given, "": the listener's
	}{
		{"a stranger", http.NotFoundHandler(), "127.0.0.1:0", ""},
		{"a relay", relay, "127.0.0.1:0", ""},
		{"a forged address", forgedIdentity(), "127.0.0.1:0", ""},
		{"a relay on the other loopback family", relay, map[bool]string{true: net.JoinHostPort(first, real.Port())}[other != ""], "localhost"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.listen == "" {
				if os.Getenv("CI") == "true" {
					t.Fatal("this machine has no IPv6 loopback; CI must have one to check this")
				}
				t.Skip("no IPv6 loopback here")
			}
			fake, asked, seen := watchedServer(t, c.listen, c.answer)
			base := fake.URL
			if c.dial != "" {
				base = "http://" + net.JoinHostPort(c.dial, real.Port())
			}
			err = list(base)
			fake.Close()
			if asked.Load() == 0 {
				t.Fatalf("%s was never asked: the CLI dialed something else", base)
			}
			if got := seen.Load().(string); got != "" {
				t.Errorf("received %q", got)
			}
			if err == nil || !strings.Contains(err.Error(), "--token") {
				t.Errorf("%v; want a refusal naming --token", err)
			}
		})
	}
}

// watchedServer serves answer on listen, counting the requests it gets
// and keeping the last Authorization header among them.
func watchedServer(t *testing.T, listen string, answer http.Handler) (*httptest.Server, *atomic.Int32, *atomic.Value) {
	t.Helper()
	var seen atomic.Value
	seen.Store("")
	var asked atomic.Int32
	fake := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked.Add(1)
		if a := r.Header.Get("Authorization"); a != "" {
			seen.Store(a)
		}
		answer.ServeHTTP(w, r)
	}))
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		t.Fatal(err)
	}
	fake.Listener.Close()
	fake.Listener = ln
	fake.Start()
	return fake, &asked, &seen
}

// loopbackFamilies returns the loopback IP `localhost` is dialed at first
// here, and the other family's, or "" if this machine has no other.
func loopbackFamilies(t *testing.T) (first, other string) {
	t.Helper()
	ips, err := net.DefaultResolver.LookupIPAddr(context.Background(), "localhost")
	if err != nil || len(ips) == 0 {
		t.Fatalf("localhost resolves to %v: %v", ips, err)
	}
	first, other = "127.0.0.1", "::1"
	if ips[0].IP.To4() == nil {
		first, other = other, first
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(other, "0"))
	if err != nil {
		return first, ""
	}
	ln.Close()
	return first, other
}

// forgedIdentity answers the challenge with its own address and a proof
// made without the data directory's key.
func forgedIdentity() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		addr := r.Context().Value(http.LocalAddrContextKey).(net.Addr).String()
		_ = json.NewEncoder(w).Encode(identity{Addr: addr, Proof: identityProof(make([]byte, 32), addr, r.URL.Query().Get("nonce"))})
	})
}
