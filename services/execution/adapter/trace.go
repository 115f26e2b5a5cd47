package adapter

import (
	"context"
	"maps"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/steward-run/steward/pkg/tracing"
)

// mcpMeta is the _meta of req's tools/call: Steward's keys and, in a
// trace, the W3C traceparent and tracestate, where MCP servers that trace
// look for them (the OpenTelemetry MCP conventions).
func mcpMeta(ctx context.Context, req Request) mcp.Meta {
	meta := mcp.Meta{MCPMetaOpKey: req.OpKey, MCPMetaActionID: req.ActionID, MCPMetaTaskID: req.TaskID}
	maps.Copy(meta, tracing.Meta(ctx))
	return meta
}
