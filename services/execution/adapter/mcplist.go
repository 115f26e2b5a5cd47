package adapter

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/toolreg"
)

// MCPTool is one tool as an MCP server lists it, with its digest: what
// `steward tools import-mcp` turns into a contract.
type MCPTool struct {
	Name        string
	Title       string
	Description string
	// InputSchema is the tool's inputSchema, as JSON.
	InputSchema json.RawMessage
	// Digest is toolreg.MCPDigest of the tool as listed.
	Digest string
	// Hints are its annotations with the protocol's defaults (destructive
	// and open-world unless it says otherwise).
	Hints *stewardv1.McpToolHints
}

// ListMCP lists the tools of the server at ep.Url, presenting ep's
// credential, over client's transport (nil: the default).
func ListMCP(ctx context.Context, client *http.Client, ep *stewardv1.McpEndpoint) ([]MCPTool, error) {
	a := NewMCP(client).(*mcpAdapter)
	session, _, err := a.open(ctx, ep)
	if err != nil {
		return nil, fmt.Errorf("open a session with %s: %w", ep.Url, err)
	}
	defer func() { _ = session.Close() }()
	var out []MCPTool
	for t, err := range session.Tools(ctx, nil) {
		if err != nil {
			return nil, fmt.Errorf("list the tools of %s: %w", ep.Url, err)
		}
		schema, err := json.Marshal(t.InputSchema)
		if err != nil {
			return nil, fmt.Errorf("tool %q: input schema: %w", t.Name, err)
		}
		d, err := toolreg.MCPDigest(t.Name, t.Description, t.InputSchema)
		if err != nil {
			return nil, fmt.Errorf("tool %q: %w", t.Name, err)
		}
		h := &stewardv1.McpToolHints{Destructive: true, OpenWorld: true}
		if an := t.Annotations; an != nil {
			h.ReadOnly, h.Idempotent = an.ReadOnlyHint, an.IdempotentHint
			if an.DestructiveHint != nil {
				h.Destructive = *an.DestructiveHint
			}
			if an.OpenWorldHint != nil {
				h.OpenWorld = *an.OpenWorldHint
			}
		}
		if h.ReadOnly {
			h.Destructive = false // the protocol: meaningful only for a tool that is not read-only
		}
		title := t.Title
		if title == "" && t.Annotations != nil {
			title = t.Annotations.Title
		}
		out = append(out, MCPTool{Name: t.Name, Title: title, Description: t.Description, InputSchema: schema, Digest: d, Hints: h})
	}
	return out, nil
}
