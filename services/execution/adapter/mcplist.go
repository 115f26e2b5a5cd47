package adapter

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/mcp"

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
	err = listTools(ctx, session, func(t *mcp.Tool) error {
		schema, err := json.Marshal(t.InputSchema)
		if err != nil {
			return fmt.Errorf("tool %q: input schema: %w", t.Name, err)
		}
		d, err := toolreg.MCPDigest(t.Name, t.Description, t.InputSchema)
		if err != nil {
			return fmt.Errorf("tool %q: %w", t.Name, err)
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
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list the tools of %s: %w", ep.Url, err)
	}
	return out, nil
}

// Bounds on a server's tools/list, hostile or broken: pages, and tools in
// all (each answer's bytes are bounded by maxMCPSessionBytes).
const (
	maxMCPPages = 100
	maxMCPTools = 10_000
)

// errMCPListing marks a listing Steward refuses to read (too long, a name
// twice): listing again would be refused again.
var errMCPListing = errors.New("mcp listing")

// listTools calls each with the tools s lists, page by page, at most
// maxMCPPages pages and maxMCPTools tools. A name listed twice is refused:
// which of the two descriptions is the tool's, and which one the server
// would run, is the server's to say, not Steward's to guess.
func listTools(ctx context.Context, s *mcp.ClientSession, each func(*mcp.Tool) error) error {
	seen := map[string]bool{}
	params := &mcp.ListToolsParams{}
	for page := 1; ; page++ {
		if page > maxMCPPages {
			return fmt.Errorf("%w: more than %d pages of tools", errMCPListing, maxMCPPages)
		}
		res, err := s.ListTools(ctx, params)
		if err != nil {
			return err
		}
		for _, t := range res.Tools {
			if seen[t.Name] {
				return fmt.Errorf("%w: tool %q listed more than once", errMCPListing, t.Name)
			}
			if seen[t.Name] = true; len(seen) > maxMCPTools {
				return fmt.Errorf("%w: more than %d tools", errMCPListing, maxMCPTools)
			}
			if err := each(t); err != nil {
				return err
			}
		}
		if res.NextCursor == "" {
			return nil
		}
		params.Cursor = res.NextCursor
	}
}
