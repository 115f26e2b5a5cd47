package adapter

import (
	"fmt"
	"testing"
	"time"
)

// TestMCPListingsAreForgotten: the listings cached by server are dropped
// once past the ttl, so that a tenant naming ever new urls does not grow
// the cache without end; with ttl 0 nothing is kept.
func TestMCPListingsAreForgotten(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	a := NewMCP(nil, WithMCPListTTL(time.Second), WithMCPClock(func() time.Time { return now })).(*mcpAdapter)
	for i := range 100 {
		a.remember(fmt.Sprintf("http://h%d/mcp", i), mcpListing{at: now, digests: map[string]string{"t": "d"}})
	}
	now = now.Add(time.Second)
	a.remember("http://last/mcp", mcpListing{at: now})
	if n := len(a.lists); n != 1 {
		t.Fatalf("%d listings cached, want 1: those past the ttl are forgotten", n)
	}
	a = NewMCP(nil, WithMCPListTTL(0)).(*mcpAdapter)
	a.remember("http://h/mcp", mcpListing{at: now})
	if n := len(a.lists); n != 0 {
		t.Fatalf("%d listings cached with ttl 0", n)
	}
}
