package app

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/sdk/go/steward"
	"github.com/steward-run/steward/services/execution/adapter"
)

// mcpImport is what `steward tools import-mcp` is told.
type mcpImport struct {
	server, tokenFile, oauthFile, tenant, version string
	only                                          []string
}

// toolsImportMCP registers a tool contract for each tool an MCP server
// lists (docs/mcp.md): its input schema as the parameters, its digest
// pinned, irreversible until the operator says otherwise, its annotations
// shown and kept as hints only.
func (c *cli) toolsImportMCP() *cobra.Command {
	var o mcpImport
	cmd := c.verb("import-mcp", "register the tools of an MCP server (tool-admins): each irreversible, its schema pinned by digest", nil, func(ctx context.Context, s *steward.Client, _ []string) error {
		if o.server == "" {
			return usagef("--server is required: the MCP server's streamable HTTP URL")
		}
		if o.tokenFile != "" && o.oauthFile != "" {
			return usagef("--token-file and --oauth-file: present one credential")
		}
		if o.tenant != "" {
			who, err := s.WhoAmI(ctx)
			if err != nil {
				return fmt.Errorf("who am I: %w", err)
			}
			if who.GetTenant() != o.tenant {
				return usagef("--tenant %s: your token is of tenant %q, and a tool is registered for its registrar's tenant", o.tenant, who.GetTenant())
			}
		}
		listed, err := adapter.ListMCP(ctx, nil, &stewardv1.McpEndpoint{Url: o.server, TokenFile: o.tokenFile, OauthFile: o.oauthFile})
		if err != nil {
			return err
		}
		return c.importMCP(ctx, s, o, listed)
	})
	f := cmd.Flags()
	f.StringVar(&o.server, "server", "", "the MCP server's streamable HTTP `URL`")
	f.StringVar(&o.tokenFile, "token-file", "", "`FILE` holding a bearer token to present, read by the execution plane at each call too")
	f.StringVar(&o.oauthFile, "oauth-file", "", "`FILE` of OAuth client credentials {\"token_url\", \"client_id\", \"client_secret\", \"scopes\"}")
	f.StringVar(&o.tenant, "tenant", "", "refuse unless your token is of this `TENANT`, whose tools these become (empty: as your token says)")
	f.StringSliceVar(&o.only, "only", nil, "import only these tools, by their `NAME`s on the server (repeat or separate by commas)")
	f.StringVar(&o.version, "version", "", "the contracts' `VERSION` (default: the first 12 hex digits of each tool's digest, so a changed tool is a new version)")
	return cmd
}

// importMCP registers the listed tools o asks for, then shows them.
func (c *cli) importMCP(ctx context.Context, s *steward.Client, o mcpImport, listed []adapter.MCPTool) error {
	for _, n := range o.only {
		if !slices.ContainsFunc(listed, func(t adapter.MCPTool) bool { return t.Name == n }) {
			return usagef("--only %s: the server lists no such tool", n)
		}
	}
	contracts, err := mcpContracts(o, listed)
	if err != nil {
		return err
	}
	var tools []*stewardv1.Tool
	rows := [][]string{}
	for i, l := range listed {
		k := contracts[i]
		if k == nil {
			continue
		}
		t, _, err := s.RegisterTool(ctx, k)
		if err != nil {
			return fmt.Errorf("register %s@%s: %w", k.Name, k.Version, err)
		}
		tools = append(tools, t)
		rows = append(rows, []string{k.Name, k.Version, word(k.EffectClass, "EFFECT_CLASS_"), mcpHints(l.Hints), l.Digest, short(l.Description, 40)})
	}
	if c.json() {
		return messages(c, tools)
	}
	if err := c.table([]string{"TOOL", "VERSION", "EFFECT", "SERVER SAYS (HINTS ONLY)", "DIGEST", "DESCRIPTION"}, rows); err != nil {
		return err
	}
	_, err = fmt.Fprintln(c.stdout, "Each tool is irreversible, and approved as such, until you register it again with the effect class you have checked (steward tools show -o json, edit effect_class, steward tools register).")
	return err
}

// mcpContracts are the contracts of the listed tools o asks for, by the
// listing's index (nil: not asked for). Two server names that become one
// Steward name ("a.b" and "a_b", or past 64 characters) are refused: the
// second would register as a new version of the first, and calls to the
// first would go to the second.
func mcpContracts(o mcpImport, listed []adapter.MCPTool) ([]*stewardv1.ToolContract, error) {
	out := make([]*stewardv1.ToolContract, len(listed))
	by := map[string]string{}
	for i, l := range listed {
		if len(o.only) > 0 && !slices.Contains(o.only, l.Name) {
			continue
		}
		k := mcpContract(o, l)
		if other, ok := by[k.Name]; ok {
			return nil, usagef("the server's tools %q and %q are both named %s here: import one of them (--only)", other, l.Name, k.Name)
		}
		by[k.Name], out[i] = l.Name, k
	}
	return out, nil
}

// mcpContract is the contract an MCP tool is imported as. Its name is
// the server's where Steward can take it, with anything else as '_'.
func mcpContract(o mcpImport, l adapter.MCPTool) *stewardv1.ToolContract {
	version := o.version
	if version == "" {
		version = strings.TrimPrefix(l.Digest, "sha256:")[:12]
	}
	return &stewardv1.ToolContract{
		Name: mcpToolName(l.Name), Version: version, Description: l.Description, ParametersSchema: string(l.InputSchema),
		EffectClass:     stewardv1.EffectClass_EFFECT_CLASS_IRREVERSIBLE,
		DataSensitivity: stewardv1.DataSensitivity_DATA_SENSITIVITY_INTERNAL,
		Endpoint: &stewardv1.ToolContract_Mcp{Mcp: &stewardv1.McpEndpoint{Url: o.server, Tool: l.Name, TokenFile: o.tokenFile, OauthFile: o.oauthFile,
			SchemaDigest: l.Digest, Hints: l.Hints}},
	}
}

// mcpToolName is an MCP tool's name as a Steward tool name: letters, digits,
// '-' and '_', at most 64.
func mcpToolName(n string) string {
	b := []rune(n)
	for i, r := range b {
		if !(r == '-' || r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			b[i] = '_'
		}
	}
	return string(b[:min(len(b), 64)])
}

// mcpHints are what the server's annotations claim, for a person to weigh.
func mcpHints(h *stewardv1.McpToolHints) string {
	var out []string
	for _, f := range []struct {
		on   bool
		name string
	}{{h.GetReadOnly(), "read-only"}, {h.GetDestructive(), "destructive"}, {h.GetIdempotent(), "idempotent"}, {h.GetOpenWorld(), "open-world"}} {
		if f.on {
			out = append(out, f.name)
		}
	}
	return strings.Join(out, ",")
}
