package adapter

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/steward-run/steward/pkg/egress"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// The _meta keys a tools/call carries (docs/mcp.md): MCP has no
// idempotency key, so the op_key travels here, for a server that honours it.
const (
	MCPMetaOpKey    = "steward/op_key"
	MCPMetaActionID = "steward/action_id"
	MCPMetaTaskID   = "steward/task_id"
)

// DefaultMCPListTTL is how long a server's tools/list answer is trusted
// before a call lists the tools again: a changed tool is refused at most
// this long after the server changed it.
const DefaultMCPListTTL = time.Second

// mcpAdapter calls the tools of MCP servers over streamable HTTP with the
// official Go SDK: one session per call (initialize, tools/list unless a
// fresh listing is cached, tools/call, close), so that no session outlives
// a server restart and no call rides on another's connection.
type mcpAdapter struct {
	base http.RoundTripper
	now  func() time.Time
	ttl  time.Duration

	mu     sync.Mutex
	lists  map[string]mcpListing
	tokens map[string]*mcpOAuth // by oauth file and its content
}

// mcpListing is one server's tools, as digests, when they were listed.
type mcpListing struct {
	at      time.Time
	digests map[string]string
}

// MCPOption configures the MCP adapter.
type MCPOption func(*mcpAdapter)

// WithMCPListTTL sets how long a tools/list answer is reused (0: list
// before every call).
func WithMCPListTTL(d time.Duration) MCPOption { return func(a *mcpAdapter) { a.ttl = max(d, 0) } }

// WithMCPClock sets the clock that ages cached listings.
func WithMCPClock(now func() time.Time) MCPOption { return func(a *mcpAdapter) { a.now = now } }

// NewMCP returns the Adapter for MCP tools, safe for concurrent use. A nil
// client means http.DefaultTransport; its Transport carries every request
// (the egress rule's, for tenants' tools).
//
// How Call classifies what happens (docs/mcp.md):
//
//   - the tool no longer listed, or listed with a name, description or
//     input schema whose digest is not the contract's: FAILED
//     DETERMINISTIC, never sent, until the tool is imported again;
//   - no session, or no listing (refused, the server down): FAILED
//     TRANSIENT, not sent; the egress rule's refusal: DETERMINISTIC;
//   - a JSON-RPC error answering tools/call: invalid params, unknown
//     method or request: FAILED DETERMINISTIC; any other code: FAILED
//     TRANSIENT with Arrived set, so the plane's rule by effect class and
//     op_key decides whether it goes again;
//   - a listing refused (too long, a name twice) or answers past
//     maxMCPSessionBytes: FAILED DETERMINISTIC (arrived once tools/call
//     was written);
//   - a result asking for input: FAILED DETERMINISTIC, arrived; shedding
//     load: FAILED TRANSIENT, arrived (the SDK would send it again);
//   - a result with isError: FAILED DETERMINISTIC, arrived: the tool ran
//     and said no;
//   - no answer after tools/call was written (the connection dropped, a
//     timeout): UNKNOWN, arrived, and never sent again blind;
//   - a result: SUCCEEDED with the result as JSON ({content,
//     structuredContent, …}), at most MaxResultBytes.
func NewMCP(client *http.Client, opts ...MCPOption) Adapter {
	base := http.DefaultTransport
	if client != nil && client.Transport != nil {
		base = client.Transport
	}
	a := &mcpAdapter{base: base, now: time.Now, ttl: DefaultMCPListTTL, lists: map[string]mcpListing{}, tokens: map[string]*mcpOAuth{}}
	for _, o := range opts {
		o(a)
	}
	return a
}

// Call implements Adapter.
func (a *mcpAdapter) Call(ctx context.Context, req Request) Result {
	m := req.Tool.GetMcp()
	switch {
	case m == nil || m.Url == "":
		return deterministic("tool %s is not an MCP tool with a url", toolName(req.Tool))
	case req.OpKey == "":
		return deterministic("no op_key: a tool is never called without one")
	}
	var canonical struct {
		Params json.RawMessage `json:"params"`
	}
	if err := json.Unmarshal(req.Body, &canonical); err != nil {
		return deterministic("params: %v", err)
	}
	ctx, cancel := context.WithTimeout(ctx, toolTimeout(req.Tool))
	defer cancel()
	session, rt, err := a.open(ctx, m)
	if errors.Is(err, errCredential) {
		return deterministic("%v", err)
	}
	if err != nil {
		return notSent("open a session with the MCP server", err)
	}
	defer func() { _ = session.Close() }()
	if r, ok := a.pinned(ctx, session, m); !ok {
		if rt.overflow.Load() {
			return deterministic("the MCP server's tools/list exceeds %d bytes: not sent", maxMCPSessionBytes)
		}
		return r
	}
	rt.calling.Store(true)
	res, err := session.CallTool(ctx, &mcp.CallToolParams{
		Name: m.Tool, Arguments: canonical.Params,
		Meta: mcpMeta(ctx, req),
	})
	switch {
	case rt.overflow.Load():
		r := deterministic("the MCP server's answers exceed %d bytes", maxMCPSessionBytes)
		r.Arrived = rt.sent.maybeSent()
		return r
	case err != nil:
		return callFailed(err, rt.sent.maybeSent())
	}
	return mcpResult(res)
}

// errCredential marks a credential that could not be read: calling again
// without a change to the file would fail the same way.
var errCredential = errors.New("credential")

// open starts a session with m's server, presenting m's credential. The
// SDK's transport never reconnects: a request lost with its connection is
// Steward's to classify, not the SDK's to resend.
func (a *mcpAdapter) open(ctx context.Context, m *stewardv1.McpEndpoint) (*mcp.ClientSession, *mcpTransport, error) {
	auth, err := a.credential(m)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %v", errCredential, err)
	}
	rt := &mcpTransport{base: a.base, auth: auth}
	// The SDK's multi round-trip middleware would answer a server asking
	// for input, or shedding load, by sending tools/call again: off, so
	// that Steward sends a call once and classifies such an answer.
	opts := &mcp.ClientOptions{MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true}}
	session, err := mcp.NewClient(&mcp.Implementation{Name: "steward", Version: "1"}, opts).Connect(ctx, &mcp.StreamableClientTransport{
		Endpoint: m.Url, HTTPClient: &http.Client{Transport: rt, CheckRedirect: noRedirect}, MaxRetries: -1, DisableStandaloneSSE: true,
	}, nil)
	return session, rt, err
}

// noRedirect keeps a session on the tool's url: the transport presents
// the credential on every request, so a redirect followed would hand it
// (and the request, tools/call included, its body resent) to any host the
// server names.
func noRedirect(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }

// notSent classifies a failure before tools/call went out.
func notSent(what string, err error) Result {
	if refusal := (*egress.Refusal)(nil); errors.As(err, &refusal) {
		return deterministic("refused by the egress rule for tenants' tools: %v", refusal)
	}
	return transient("request not sent: %s: %v", what, err)
}

// callFailed classifies a tools/call that got no result.
func callFailed(err error, sent bool) Result {
	var werr *jsonrpc.Error
	if errors.As(err, &werr) && !sdkLocal(werr.Code) {
		var r Result
		switch werr.Code {
		case jsonrpc.CodeInvalidParams, jsonrpc.CodeMethodNotFound, jsonrpc.CodeInvalidRequest, jsonrpc.CodeParseError:
			r = deterministic("the MCP server refused the call (JSON-RPC %d): %s", werr.Code, clip(werr.Message))
		default:
			r = transient("the MCP server answered JSON-RPC error %d: %s", werr.Code, clip(werr.Message))
		}
		r.Arrived = true
		return r
	}
	if sent {
		r := unknown("no answer after tools/call was sent: %v", err)
		r.Arrived = true
		return r
	}
	return notSent("tools/call", err)
}

// sdkLocal reports whether code is one the SDK's client makes itself for
// a request the transport lost (rejected by transport, closing, unknown):
// not the server's answer. The SDK takes any error of the HTTP client for
// "not sent"; Steward asks its own sendTracker instead.
func sdkLocal(code int64) bool {
	switch code {
	case -32001, -32003, -32004, -32005:
		return true
	}
	return false
}

// mcpResult classifies a tools/call result.
func mcpResult(res *mcp.CallToolResult) Result {
	if res.NeedsInput() || res.InputRequests != nil {
		// The call did not complete: the server sheds load (no requests)
		// or asks for input no one here can give.
		r := transient("the MCP server is shedding load: the call did not complete")
		if len(res.InputRequests) > 0 {
			r = deterministic("the MCP tool asked for input (%d requests) Steward cannot give: the call did not complete", len(res.InputRequests))
		}
		r.Arrived = true
		return r
	}
	if res.IsError {
		var text []string
		for _, c := range res.Content {
			if t, ok := c.(*mcp.TextContent); ok {
				text = append(text, t.Text)
			}
		}
		r := deterministic("the MCP tool reported an error: %s", clip(strings.Join(text, " ")))
		r.Arrived = true
		return r
	}
	body, err := json.Marshal(res)
	var r Result
	switch {
	case err != nil:
		r = deterministic("encode the MCP tool's result: %v", err)
	case len(body) > MaxResultBytes:
		r = deterministic("result too large: more than %d bytes", MaxResultBytes)
	default:
		r = succeeded(body)
	}
	r.Arrived = true
	return r
}

// Status implements Adapter: MCP has no status query.
func (a *mcpAdapter) Status(context.Context, Request) (StatusAnswer, error) {
	return StatusAnswer{}, ErrNoStatusQuery
}

// mcpTransport presents the tool's credential on every request and, once
// calling is set, watches whether a request was written (sendTracker): a
// tools/call that may have reached the server is never taken for unsent.
type mcpTransport struct {
	base    http.RoundTripper
	auth    func(context.Context) (string, error)
	calling atomic.Bool
	sent    sendTracker
	// read counts the bytes of every answer of the session, overflow is
	// set once they pass maxMCPSessionBytes: a hostile server's endless
	// body or listing stops there, not at the memory's end.
	read     atomic.Int64
	overflow atomic.Bool
}

func (t *mcpTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	if t.auth != nil {
		h, err := t.auth(r.Context())
		if err != nil {
			return nil, err
		}
		r.Header.Set("Authorization", h)
	}
	if t.calling.Load() && r.Method == http.MethodPost {
		r.GetBody = nil // never resent by the transport
		r = r.WithContext(withTrace(r.Context(), &t.sent))
	}
	resp, err := t.base.RoundTrip(r)
	if err == nil {
		resp.Body = &mcpBody{ReadCloser: resp.Body, t: t}
	}
	return resp, err
}

// maxMCPSessionBytes bounds what one session (one call) reads from its
// server: its listing and its answer, the latter at most MaxResultBytes.
const maxMCPSessionBytes = 4*MaxResultBytes + 8<<20

// errMCPTooLarge ends an answer past maxMCPSessionBytes.
var errMCPTooLarge = errors.New("the MCP server's answers are too large")

// mcpBody counts an answer's bytes against its session's bound.
type mcpBody struct {
	io.ReadCloser
	t *mcpTransport
}

func (b *mcpBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if b.t.read.Add(int64(n)) > maxMCPSessionBytes {
		b.t.overflow.Store(true)
		return 0, errMCPTooLarge
	}
	return n, err
}
