package app

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
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
