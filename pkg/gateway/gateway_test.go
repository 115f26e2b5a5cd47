package gateway_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/steward-run/steward/pkg/gateway"
)

// replica is a real HTTP server standing for a plane's replica: cleartext
// HTTP/2 and HTTP/1.1, as `steward serve` listens. Its /healthz answers
// 200 while healthy; every other path is served by h.
type replica struct {
	*httptest.Server
	healthy atomic.Bool
	calls   atomic.Int32
}

func startReplica(t testing.TB, h http.HandlerFunc) *replica {
	t.Helper()
	return startReplicaAt(t, "127.0.0.1:0", h)
}

// startReplicaAt starts a replica listening on addr.
func startReplicaAt(t testing.TB, addr string, h http.HandlerFunc) *replica {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	r := &replica{}
	r.healthy.Store(true)
	r.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.URL.Path == gateway.HealthPath {
			if !r.healthy.Load() {
				w.WriteHeader(http.StatusServiceUnavailable)
			}
			return
		}
		r.calls.Add(1)
		h(w, req)
	}))
	var p http.Protocols
	p.SetHTTP1(true)
	p.SetUnencryptedHTTP2(true)
	r.Config.Protocols = &p
	r.Listener.Close()
	r.Listener = ln
	r.Start()
	t.Cleanup(r.Close)
	return r
}

// echo answers with the replica's name, the call's path and its body.
func echo(name string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		_, _ = io.WriteString(w, name+" "+r.URL.Path+" "+string(body))
	}
}

func mustURL(t testing.TB, raw string) *url.URL {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// startGateway serves a gateway over planes, each given as its services
// and replicas, checked once.
func startGateway(t testing.TB, planes ...gateway.Plane) (*gateway.Gateway, *httptest.Server) {
	t.Helper()
	g, err := gateway.New(gateway.Config{Planes: planes, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	g.Check(context.Background())
	srv := httptest.NewServer(g.Handler())
	t.Cleanup(srv.Close)
	return g, srv
}

func plane(t *testing.T, name string, services []string, replicas ...*replica) gateway.Plane {
	t.Helper()
	p := gateway.Plane{Name: name, Services: services}
	for _, r := range replicas {
		p.Replicas = append(p.Replicas, mustURL(t, r.URL))
	}
	return p
}

func post(t *testing.T, url, body string, header http.Header) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header = header.Clone()
	if req.Header == nil {
		req.Header = http.Header{}
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	got, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(got)
}

func TestRoutesEachServiceToItsPlane(t *testing.T) {
	a, b := startReplica(t, echo("a")), startReplica(t, echo("b"))
	_, gw := startGateway(t, plane(t, "alpha", []string{"x.v1.AService"}, a), plane(t, "beta", []string{"x.v1.BService", "x.v1.CService"}, b))
	for path, want := range map[string]string{
		"/x.v1.AService/Get":  "a /x.v1.AService/Get {}",
		"/x.v1.BService/Put":  "b /x.v1.BService/Put {}",
		"/x.v1.CService/List": "b /x.v1.CService/List {}",
	} {
		if code, got := post(t, gw.URL+path, "{}", nil); code != http.StatusOK || got != want {
			t.Errorf("%s: %d %q, want 200 %q", path, code, got, want)
		}
	}
	// An unknown service: not_found in Connect's error shape, naming the path.
	code, got := post(t, gw.URL+"/x.v1.DService/Get", "{}", nil)
	var cerr struct{ Code, Message string }
	if err := json.Unmarshal([]byte(got), &cerr); err != nil || code != http.StatusNotFound || cerr.Code != "not_found" || !strings.Contains(cerr.Message, `"/x.v1.DService/Get"`) {
		t.Errorf("an unknown service: %d %s (%v), want 404 and a not_found naming the path", code, got, err)
	}
	if a.calls.Load() != 1 || b.calls.Load() != 2 {
		t.Errorf("replica calls a=%d b=%d, want 1 and 2", a.calls.Load(), b.calls.Load())
	}
}

func TestANewGatewayRefusesAmbiguousOrEmptyPlanes(t *testing.T) {
	a := startReplica(t, echo("a"))
	if _, err := gateway.New(gateway.Config{Planes: []gateway.Plane{plane(t, "alpha", []string{"x.v1.S"}, a), plane(t, "beta", []string{"x.v1.S"}, a)}}); err == nil || !strings.Contains(err.Error(), "x.v1.S is served by the alpha and the beta plane") {
		t.Errorf("one service on two planes: %v", err)
	}
	if _, err := gateway.New(gateway.Config{Planes: []gateway.Plane{{Name: "alpha", Services: []string{"x.v1.S"}}}}); err == nil || !strings.Contains(err.Error(), "alpha plane has no replica") {
		t.Errorf("a plane without replicas: %v", err)
	}
}

// TestHeadersGoThroughAsSent: the caller's Authorization reaches the plane
// unchanged; hop-by-hop headers (and any the Connection header names) and
// X-Forwarded-*/Forwarded do not; the gateway adds none of its own.
func TestHeadersGoThroughAsSent(t *testing.T) {
	var seen http.Header
	a := startReplica(t, func(w http.ResponseWriter, r *http.Request) { seen = r.Header.Clone() })
	_, gw := startGateway(t, plane(t, "alpha", []string{"x.v1.S"}, a))
	sent := http.Header{
		"Authorization":       {"Bearer caller-token"},
		"Steward-Principal":   {"user:someone"},
		"Connection":          {"X-Hop"},
		"X-Hop":               {"dropped"},
		"Keep-Alive":          {"timeout=5"},
		"Proxy-Authorization": {"Bearer proxy"},
		"X-Forwarded-For":     {"10.0.0.1"},
		"X-Forwarded-Host":    {"evil.example"},
		"X-Forwarded-Proto":   {"https"},
		"Forwarded":           {"for=10.0.0.1"},
	}
	if code, got := post(t, gw.URL+"/x.v1.S/M", "{}", sent); code != http.StatusOK {
		t.Fatalf("%d %s", code, got)
	}
	if got := seen.Values("Authorization"); len(got) != 1 || got[0] != "Bearer caller-token" {
		t.Errorf("Authorization reached the plane as %q", got)
	}
	// Who the caller names in the open mode is the plane's to judge.
	if got := seen.Get("Steward-Principal"); got != "user:someone" {
		t.Errorf("Steward-Principal reached the plane as %q", got)
	}
	for _, h := range []string{"X-Hop", "Keep-Alive", "Proxy-Authorization", "Upgrade", "X-Forwarded-For", "X-Forwarded-Host", "X-Forwarded-Proto", "Forwarded", "Via"} {
		if v := seen.Values(h); len(v) > 0 {
			t.Errorf("%s reached the plane: %q", h, v)
		}
	}
}

// TestAReplicaThatRefusesIsPassedOver: a replica whose process is gone is
// marked down by the first call that cannot connect to it, and that call,
// not sent, goes to the next replica with its body whole.
func TestAReplicaThatRefusesIsPassedOver(t *testing.T) {
	a, b := startReplica(t, echo("a")), startReplica(t, echo("b"))
	g, gw := startGateway(t, plane(t, "alpha", []string{"x.v1.S"}, a, b))
	if !g.Ready() {
		t.Fatal("not ready with both replicas up")
	}
	a.Close()
	for i := range 4 {
		if code, got := post(t, gw.URL+"/x.v1.S/M", `{"n": 1}`, nil); code != http.StatusOK || got != `b /x.v1.S/M {"n": 1}` {
			t.Fatalf("call %d with replica a gone: %d %q", i, code, got)
		}
	}
	code, readyz := get(t, gw.URL+"/readyz")
	if code != http.StatusOK || !strings.Contains(readyz, "alpha: 1 of 2 replicas healthy") {
		t.Errorf("/readyz after a's refusal, before any check: %d\n%s", code, readyz)
	}
	// With b gone too, a call is unavailable, naming the plane: the one
	// that finds b's connection broken, or the next, which finds no
	// replica that takes it.
	b.Close()
	for range 2 {
		code, got := post(t, gw.URL+"/x.v1.S/M", "{}", http.Header{"Connect-Protocol-Version": {"1"}})
		if code != http.StatusServiceUnavailable || !strings.Contains(got, `"code":"unavailable"`) || !strings.Contains(got, "the alpha plane") || strings.Contains(got, "127.0.0.1") {
			t.Errorf("with every replica gone: %d %s, want unavailable naming the plane and no replica's address", code, got)
		}
	}
	if g.Ready() {
		t.Error("ready with every replica gone")
	}
}

// TestACallSentIsNeverSentAgain: a replica that fails a call after
// taking it (the stream reset) answers unavailable; the next replica never
// sees the call.
func TestACallSentIsNeverSentAgain(t *testing.T) {
	a := startReplica(t, func(http.ResponseWriter, *http.Request) { panic(http.ErrAbortHandler) })
	b := startReplica(t, echo("b"))
	_, gw := startGateway(t, plane(t, "alpha", []string{"x.v1.S"}, a, b))
	for range 2 { // round robin: one of the two calls goes to a first
		// A GET has no body whose reading would tell it was sent.
		get(t, gw.URL+"/x.v1.S/M?encoding=json&message=%7B%7D")
	}
	if a.calls.Load() != 1 || b.calls.Load() != 1 {
		t.Errorf("calls a=%d b=%d: the call a took was sent again", a.calls.Load(), b.calls.Load())
	}
}

func TestHealthChecksMarkReplicasUpAndDown(t *testing.T) {
	a, b := startReplica(t, echo("a")), startReplica(t, echo("b"))
	g, err := gateway.New(gateway.Config{Planes: []gateway.Plane{plane(t, "alpha", []string{"x.v1.A"}, a), plane(t, "beta", []string{"x.v1.B"}, b)}, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(g.Handler())
	defer srv.Close()
	if code, body := get(t, srv.URL+"/readyz"); code != http.StatusServiceUnavailable || !strings.Contains(body, "alpha: 0 of 1 replicas healthy") {
		t.Errorf("/readyz before any check: %d\n%s", code, body)
	}
	if code, _ := get(t, srv.URL+"/healthz"); code != http.StatusOK {
		t.Errorf("/healthz: %d", code)
	}
	g.Check(context.Background())
	if code, body := get(t, srv.URL+"/readyz"); code != http.StatusOK || !g.Ready() {
		t.Errorf("/readyz with every replica healthy: %d\n%s", code, body)
	}
	b.healthy.Store(false)
	g.Check(context.Background())
	if code, body := get(t, srv.URL+"/readyz"); code != http.StatusServiceUnavailable || !strings.Contains(body, "beta: 0 of 1") {
		t.Errorf("/readyz with beta's only replica unhealthy: %d\n%s", code, body)
	}
	b.healthy.Store(true)
	g.Check(context.Background())
	if !g.Ready() {
		t.Error("not ready once beta is healthy again")
	}
}

func TestCallsTakeTurnsOverHealthyReplicas(t *testing.T) {
	a, b := startReplica(t, echo("a")), startReplica(t, echo("b"))
	_, gw := startGateway(t, plane(t, "alpha", []string{"x.v1.S"}, a, b))
	for range 6 {
		post(t, gw.URL+"/x.v1.S/M", "{}", nil)
	}
	if a.calls.Load() != 3 || b.calls.Load() != 3 {
		t.Errorf("calls a=%d b=%d, want 3 each", a.calls.Load(), b.calls.Load())
	}
}

// TestAStreamFlowsAsWritten: a message the plane flushes reaches the
// caller before the plane writes the next (a watch's events as they come).
func TestAStreamFlowsAsWritten(t *testing.T) {
	next := make(chan struct{})
	a := startReplica(t, func(w http.ResponseWriter, r *http.Request) {
		// As a plane's streaming handler does, it reads the request
		// first: one that returns with the request unread has its
		// stream reset by Go's HTTP/2 server, which can cut the answer
		// short (about 1 run in 500 under load).
		_, _ = io.Copy(io.Discard, r.Body)
		_, _ = io.WriteString(w, "first\n")
		w.(http.Flusher).Flush()
		<-next
		_, _ = io.WriteString(w, "second\n")
	})
	_, gw := startGateway(t, plane(t, "alpha", []string{"x.v1.S"}, a))
	resp, err := http.Post(gw.URL+"/x.v1.S/Watch", "application/connect+json", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	lines := bufio.NewReader(resp.Body)
	if line, err := lines.ReadString('\n'); line != "first\n" {
		t.Fatalf("first line %q (%v)", line, err)
	}
	close(next)
	if line, err := lines.ReadString('\n'); line != "second\n" {
		t.Fatalf("second line %q (%v)", line, err)
	}
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}
