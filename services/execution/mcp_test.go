package execution_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/services/execution/adapter"
	"github.com/steward-run/steward/services/execution/breaker"
)

// flakyMCP is an MCP server (the Go SDK's) whose tool "charge" does its
// work on every call and answers the first with a JSON-RPC internal
// error, the rest with a result. It records the op_key of every call.
func flakyMCP(t *testing.T) (url string, keys func() []string) {
	var mu sync.Mutex
	var seen []string
	s := mcp.NewServer(&mcp.Implementation{Name: "flaky", Version: "1"}, nil)
	s.AddTool(&mcp.Tool{Name: "charge", Description: "charges a card", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			mu.Lock()
			defer mu.Unlock()
			key, _ := req.Params.Meta[adapter.MCPMetaOpKey].(string)
			seen = append(seen, key)
			if len(seen) == 1 {
				return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "ledger timeout"}
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "charged"}}}, nil
		})
	ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	t.Cleanup(ts.Close)
	return ts.URL, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), seen...)
	}
}

// registerMCP registers "charge" of the server at url, pinned as listed,
// as edit leaves its contract.
func (b *harness) registerMCP(url string, edit func(*stewardv1.ToolContract)) {
	b.t.Helper()
	listed, err := adapter.ListMCP(context.Background(), nil, &stewardv1.McpEndpoint{Url: url})
	if err != nil || len(listed) != 1 {
		b.t.Fatalf("list: %v %v", listed, err)
	}
	c := &stewardv1.ToolContract{Name: "charge", Version: "1", DataSensitivity: stewardv1.DataSensitivity_DATA_SENSITIVITY_INTERNAL,
		ParametersSchema: string(listed[0].InputSchema),
		Endpoint:         &stewardv1.ToolContract_Mcp{Mcp: &stewardv1.McpEndpoint{Url: url, Tool: "charge", SchemaDigest: listed[0].Digest}}}
	edit(c)
	if _, _, err := b.plane.Register(context.Background(), "", "test", c); err != nil {
		b.t.Fatal(err)
	}
}

// TestAnMCPServersErrorIsRetriedAsTheEffectClassAllows: a JSON-RPC error
// answering tools/call may come after the tool did its work. A tool whose
// contract says it honours the op_key (sent in _meta) is called again
// with the same key; an irreversible one is never called again, its
// outcome unknown.
func TestAnMCPServersErrorIsRetriedAsTheEffectClassAllows(t *testing.T) {
	t.Run("honours its key", func(t *testing.T) {
		b := newHarness(t, breaker.Config{})
		url, keys := flakyMCP(t)
		b.registerMCP(url, func(c *stewardv1.ToolContract) {
			c.EffectClass, c.Idempotency = stewardv1.EffectClass_EFFECT_CLASS_IDEMPOTENT_WRITE, &stewardv1.IdempotencySupport{HonoursKey: true}
		})
		taskID, actionID := b.permit("t-mcp-honours", "charge", "card-1")
		a := b.WaitAction(taskID, actionID, status(stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED))
		if k := keys(); len(k) != 2 || k[0] != a.OpKey || k[1] != a.OpKey {
			t.Fatalf("the server saw op_keys %v, want %s twice", k, a.OpKey)
		}
	})
	t.Run("irreversible", func(t *testing.T) {
		b := newHarness(t, breaker.Config{})
		url, keys := flakyMCP(t)
		b.registerMCP(url, irreversible)
		taskID, actionID := b.permit("t-mcp-irreversible", "charge", "card-1")
		a := b.WaitAction(taskID, actionID, status(unknownS))
		if !strings.Contains(a.Outcome.GetReason(), "ledger timeout") || !strings.Contains(a.Outcome.GetReason(), "not called again") {
			t.Errorf("unknown because %q; want the server's error and the rule", a.Outcome.GetReason())
		}
		if k := keys(); len(k) != 1 {
			t.Fatalf("the server saw %d calls, want 1", len(k))
		}
	})
}
