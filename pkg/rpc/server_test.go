package rpc_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"testing"

	"github.com/steward-run/steward/pkg/rpc"
)

// get returns the status and body of a GET of url.
func get(url string) (int, string, error) {
	resp, err := http.Get(url)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body), err
}

// serve starts srv and returns its base URL; it shuts down with the test.
func serve(t *testing.T, srv *rpc.Server) string {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- srv.Serve() }()
	t.Cleanup(func() {
		_ = srv.Shutdown(context.Background())
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	return "http://" + srv.Addr()
}

// TestWithHandlerMountsBesideHealthz checks that an extra handler is served,
// only for its method, and that /healthz still is.
func TestWithHandlerMountsBesideHealthz(t *testing.T) {
	srv, err := rpc.Listen("127.0.0.1:0", nil, rpc.WithHandler("GET /metrics", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, "up 1\n")
	})))
	if err != nil {
		t.Fatal(err)
	}
	url := serve(t, srv)
	for _, tt := range []struct {
		method, path string
		code         int
		body         string
	}{
		{http.MethodGet, "/healthz", http.StatusOK, "ok\n"},
		{http.MethodGet, "/metrics", http.StatusOK, "up 1\n"},
		{http.MethodPost, "/metrics", http.StatusMethodNotAllowed, ""},
		{http.MethodGet, "/nothing", http.StatusNotFound, ""},
	} {
		req, _ := http.NewRequest(tt.method, url+tt.path, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tt.code || tt.body != "" && string(body) != tt.body {
			t.Errorf("%s %s = %d %q, want %d %q", tt.method, tt.path, resp.StatusCode, body, tt.code, tt.body)
		}
	}
}

// Mount a plain HTTP handler, here a stand-in for Prometheus' /metrics,
// on the same listener as the Connect services.
func ExampleWithHandler() {
	metrics := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, "steward_up 1\n")
	})
	srv, err := rpc.Listen("127.0.0.1:0", nil, rpc.WithHandler("GET /metrics", metrics))
	if err != nil {
		panic(err)
	}
	go func() { _ = srv.Serve() }()
	defer func() { _ = srv.Shutdown(context.Background()) }()
	code, body, err := get("http://" + srv.Addr() + "/metrics")
	if err != nil {
		panic(err)
	}
	fmt.Print(code, " ", body)
	// Output: 200 steward_up 1
}
