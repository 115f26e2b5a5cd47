package adapter_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"go.opentelemetry.io/otel/trace"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/services/execution/adapter"
)

// inTrace returns ctx in a sampled span of a fixed trace, and the W3C
// traceparent a tool must receive for it.
func inTrace() (context.Context, string) {
	sc := trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: trace.TraceID{0x4b, 0xf9, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14}, SpanID: trace.SpanID{0, 0xf0, 1, 2, 3, 4, 5, 6},
		TraceFlags: trace.FlagsSampled,
	})
	return trace.ContextWithSpanContext(context.Background(), sc), "00-" + sc.TraceID().String() + "-" + sc.SpanID().String() + "-01"
}

// TestToolsGetTheTraceContext: an HTTP tool's call and status query carry
// the W3C traceparent of the call's span, and an MCP tool's _meta does,
// beside Steward's keys; outside a trace neither carries one.
func TestToolsGetTheTraceContext(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Method+" "+r.Header.Get("Traceparent"))
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"state":"succeeded","result":{}}`))
	}))
	defer srv.Close()
	ctx, parent := inTrace()
	tool := httpTool(srv.URL, srv.URL+"/status", 0)
	h := adapter.NewHTTP(srv.Client())
	if res := h.Call(ctx, httpRequest(tool, "k-traced")); res.Status != stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED {
		t.Fatalf("call: %+v", res)
	}
	if _, err := h.Status(ctx, httpRequest(tool, "k-traced")); err != nil {
		t.Fatal(err)
	}
	if res := h.Call(context.Background(), httpRequest(tool, "k-untraced")); res.Status != stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED {
		t.Fatalf("call: %+v", res)
	}
	want := []string{"POST " + parent, "GET " + parent, "POST "}
	if len(seen) != len(want) {
		t.Fatalf("the tool saw %q; want %q", seen, want)
	}
	for i := range want {
		if seen[i] != want[i] {
			t.Errorf("request %d had %q; want %q", i, seen[i], want[i])
		}
	}

	f := startMCP(t, "tok-1")
	ep := &stewardv1.McpEndpoint{Url: f.url, TokenFile: tokenFile(t, "tok-1")}
	ad := adapter.NewMCP(nil)
	ad.Call(ctx, mcpRequest(imported(t, ep, "echo"), "k-mcp", `{"msg":"hi"}`))
	ad.Call(context.Background(), mcpRequest(imported(t, ep, "echo"), "k-mcp-untraced", `{"msg":"hi"}`))
	if len(f.metas) != 2 || f.metas[0]["traceparent"] != parent || f.metas[0][adapter.MCPMetaOpKey] != "k-mcp" {
		t.Fatalf("the MCP server saw _meta %v; want traceparent %s beside the op_key", f.metas, parent)
	}
	if _, ok := f.metas[1]["traceparent"]; ok {
		t.Errorf("a call outside a trace sent _meta %v", f.metas[1])
	}
}
