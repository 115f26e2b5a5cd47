package toolreg

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"regexp"

	"github.com/steward-run/steward/pkg/errs"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// maxMCPTool bounds an MCP tool's name, as the server spells it.
const maxMCPTool = 128

var mcpDigest = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)

// MCPDigest is what a contract pins of an MCP tool (docs/mcp.md): "sha256:"
// and the hex SHA-256 of {"description","inputSchema","name"} as JSON with
// its object keys sorted, inputSchema decoded from the server's JSON. Two
// listings of the same tool digest the same whatever order the server
// writes its keys in; any change a model would read — a word of the
// description, a property of the schema — changes it.
func MCPDigest(name, description string, inputSchema any) (string, error) {
	// Through JSON and back so that any Go value (a struct, RawMessage) is
	// the map encoding/json sorts the keys of.
	raw, err := json.Marshal(inputSchema)
	if err != nil {
		return "", fmt.Errorf("input schema: %w", err)
	}
	var schema any
	if err := json.Unmarshal(raw, &schema); err != nil {
		return "", fmt.Errorf("input schema: %w", err)
	}
	doc, err := json.Marshal(map[string]any{"name": name, "description": description, "inputSchema": schema})
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(doc)
	return "sha256:" + hex.EncodeToString(sum[:]), nil
}

// IsMCP reports whether c's tool is one of an MCP server's.
func IsMCP(c *stewardv1.ToolContract) bool { return c.GetMcp() != nil }

// checkMCP checks an MCP endpoint. The effect class is the operator's,
// never the server's annotations; what an MCP server cannot offer is
// refused: a status query.
func checkMCP(c *stewardv1.ToolContract, m *stewardv1.McpEndpoint) error {
	if err := checkURL("contract.mcp.url", m.Url, true); err != nil {
		return err
	}
	switch {
	case m.Tool == "":
		return errs.Field("contract.mcp.tool", "is required: the tool's name on the server")
	case len(m.Tool) > maxMCPTool:
		return errs.Field("contract.mcp.tool", "is longer than %d bytes", maxMCPTool)
	case len(m.TokenFile) > maxKeyFile:
		return errs.Field("contract.mcp.token_file", "is longer than %d bytes", maxKeyFile)
	case len(m.OauthFile) > maxKeyFile:
		return errs.Field("contract.mcp.oauth_file", "is longer than %d bytes", maxKeyFile)
	case m.TokenFile != "" && m.OauthFile != "":
		return errs.Field("contract.mcp.oauth_file", "is set with token_file: present one credential, a bearer token or OAuth client credentials")
	case !mcpDigest.MatchString(m.SchemaDigest):
		return errs.Field("contract.mcp.schema_digest", "is %s; want \"sha256:\" and 64 lowercase hex digits, as steward tools import-mcp pins it", errs.Quote(m.SchemaDigest))
	case c.StatusQuery:
		return errs.Field("contract.status_query", "must not be set: an MCP server offers no status query")
	}
	return nil
}
