package a2a

import (
	"net/http"
	"slices"
	"testing"
)

// TestForwardPresentsHeadersUnchanged: the caller's Authorization and
// Steward-Principal reach the API as sent, every value of them (a
// principal named twice is refused by the API, not reduced to the first
// here), and nothing else of the request does.
func TestForwardPresentsHeadersUnchanged(t *testing.T) {
	in := http.Header{}
	in.Add("Steward-Principal", "user:alice")
	in.Add("Steward-Principal", "user:mallory")
	in.Set("Authorization", "Bearer t")
	in.Set("Steward-Tenant", "globex")
	out := http.Header{}
	out.Set("Steward-Principal", "stale")
	forward(in).set(out)
	if got := out.Values("Steward-Principal"); !slices.Equal(got, []string{"user:alice", "user:mallory"}) {
		t.Errorf("Steward-Principal %q", got)
	}
	if out.Get("Authorization") != "Bearer t" || out.Get("Steward-Tenant") != "" {
		t.Errorf("headers %v", out)
	}
}
