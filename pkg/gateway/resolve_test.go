package gateway_test

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/steward-run/steward/pkg/gateway"
)

// names is a resolver a test changes: what each host name resolves to.
type names struct {
	mu    sync.Mutex
	addrs map[string][]string
}

func (n *names) set(host string, addrs ...string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.addrs[host] = addrs
}

func (n *names) lookup(_ context.Context, host string) ([]string, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if a := n.addrs[host]; len(a) > 0 {
		return a, nil
	}
	return nil, errors.New("no such host")
}

// TestANameIsOneReplicaPerAddress: a plane given as one name that
// resolves to each of its pods' addresses (a headless Service) is one
// replica per address, re-resolved at every check: calls spread over
// them, a pod that goes is dropped, and a name that stops resolving is
// one replica, down.
func TestANameIsOneReplicaPerAddress(t *testing.T) {
	a := startReplica(t, echo("a"))
	_, port, _ := net.SplitHostPort(a.Listener.Addr().String())
	b := startReplicaAt(t, "127.0.0.2:"+port, echo("b"))
	dns := &names{addrs: map[string][]string{}}
	dns.set("state.test", "127.0.0.2", "127.0.0.1")
	g, err := gateway.New(gateway.Config{
		Planes:     []gateway.Plane{{Name: "state", Services: []string{"x.v1.S"}, Replicas: []*url.URL{mustURL(t, "http://state.test:"+port)}}},
		LookupHost: dns.lookup, Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(g.Handler())
	defer srv.Close()
	g.Check(context.Background())
	if code, body := get(t, srv.URL+"/readyz"); code != http.StatusOK || !strings.Contains(body, "state: 2 of 2 replicas healthy") {
		t.Fatalf("/readyz with the name resolving to two addresses: %d\n%s", code, body)
	}
	for range 4 {
		post(t, srv.URL+"/x.v1.S/M", "{}", nil)
	}
	if a.calls.Load() != 2 || b.calls.Load() != 2 {
		t.Errorf("calls a=%d b=%d, want 2 each", a.calls.Load(), b.calls.Load())
	}
	dns.set("state.test", "127.0.0.2")
	g.Check(context.Background())
	if _, body := get(t, srv.URL+"/readyz"); !strings.Contains(body, "state: 1 of 1 replicas healthy") {
		t.Errorf("/readyz once the name has one address:\n%s", body)
	}
	dns.set("state.test")
	g.Check(context.Background())
	if code, body := get(t, srv.URL+"/readyz"); code != http.StatusServiceUnavailable || !strings.Contains(body, "state: 0 of 1") {
		t.Errorf("/readyz once the name resolves to nothing: %d\n%s", code, body)
	}
}
