package app

import (
	"strings"
	"testing"

	"github.com/steward-run/steward/services/execution/adapter"
)

// TestMCPImportRefusesNamesThatCollide: two tools of a server whose names
// become one Steward name are refused, naming both; --only picks one.
func TestMCPImportRefusesNamesThatCollide(t *testing.T) {
	d := "sha256:" + strings.Repeat("ab", 32)
	listed := []adapter.MCPTool{{Name: "send_payment", Digest: d}, {Name: "send.payment", Digest: d}, {Name: "lookup", Digest: d}}
	_, err := mcpContracts(mcpImport{server: "http://mcp"}, listed)
	if err == nil || !strings.Contains(err.Error(), `"send_payment" and "send.payment"`) {
		t.Fatalf("colliding names: %v", err)
	}
	ks, err := mcpContracts(mcpImport{server: "http://mcp", only: []string{"send.payment", "lookup"}}, listed)
	if err != nil || ks[0] != nil || ks[1].GetMcp().GetTool() != "send.payment" || ks[1].Name != "send_payment" || ks[2].Name != "lookup" {
		t.Fatalf("--only one of them: %v %v", ks, err)
	}
}
