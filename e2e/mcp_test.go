package e2e_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/encoding/protojson"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// mcpServer is e2e/testdata/mcp-server/server.mjs running under node: an
// MCP server built with the TypeScript SDK, which Steward's Go client has
// never seen the code of.
type mcpServer struct {
	url  string // its MCP endpoint
	base string // its control endpoints: /calls, /change
}

// mcpCall is one tools/call the server received.
type mcpCall struct {
	Name      string         `json:"name"`
	Arguments map[string]any `json:"arguments"`
	Meta      map[string]any `json:"_meta"`
}

// startMCPServer runs the server, npm ci'ing its dependencies when they
// are missing (.ci/run installs them); without node or npm the test
// skips, and fails under CI=true.
func startMCPServer(t *testing.T, token string) *mcpServer {
	t.Helper()
	requireTools(t, "node", "npm")
	dir, err := filepath.Abs("testdata/mcp-server")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@modelcontextprotocol", "sdk")); err != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		runNode(ctx, t, dir, nil, "npm", "ci", "--no-audit", "--no-fund")
	}
	cmd := exec.Command("node", "server.mjs")
	cmd.Dir, cmd.Env = dir, append(os.Environ(), "MCP_TOKEN="+token)
	url := startAnnouncing(t, cmd, "listening ")
	return &mcpServer{url: url, base: strings.TrimSuffix(url, "/mcp")}
}

// startAnnouncing starts cmd, its stderr in the test's log, and returns
// what its first line of stdout says after prefix: where it listens. It
// is killed when the test ends.
func startAnnouncing(t *testing.T, cmd *exec.Cmd, prefix string) string {
	t.Helper()
	cmd.Stderr = &testWriter{tb: t}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	line, err := bufio.NewReader(stdout).ReadString('\n')
	url, ok := strings.CutPrefix(strings.TrimSpace(line), prefix)
	if err != nil || !ok {
		t.Fatalf("%s printed %q (%v), want %q and its URL", cmd.Path, line, err, prefix)
	}
	return url
}

// calls are the tools/call requests that reached the server with
// arguments.to, in order.
func (s *mcpServer) calls(t *testing.T, to string) []mcpCall {
	t.Helper()
	resp, err := http.Get(s.base + "/calls")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var all, out []mcpCall
	if err := json.NewDecoder(resp.Body).Decode(&all); err != nil {
		t.Fatal(err)
	}
	for _, c := range all {
		if c.Arguments["to"] == to {
			out = append(out, c)
		}
	}
	return out
}

// approveMCP waits for the action to ask for approval and approves it as
// user:bo.
func approveMCP(t *testing.T, h *harness, taskID string, a *stewardv1.Action) {
	t.Helper()
	_, a = waitAction(t, h.agent.clients, taskID, a.ActionId, stewardv1.ActionStatus_ACTION_STATUS_AWAITING_APPROVAL)
	if _, err := h.approver.governance.DecideApproval(context.Background(), connect.NewRequest(&stewardv1.DecideApprovalRequest{
		ApprovalId: a.Approval.ApprovalId, ActionHash: a.ActionHash, Decision: stewardv1.ApprovalDecision_APPROVAL_DECISION_APPROVE,
	})); err != nil {
		t.Fatal(err)
	}
}

// mcpTask is a task that may call the imported tools, approved by user:bo.
func mcpTask(t *testing.T, h *harness, requestID string) string {
	k := contract()
	k.AllowedTools, k.AuthorizerRef = []string{"send_payment", "lookup_rate"}, "user:bo"
	return h.create(t, requestID, k)
}

// TestMCPServerAsGovernedTools is issue 35's first "done when", with the
// real binary and an MCP server of an independent implementation (the
// npm @modelcontextprotocol/sdk): `steward tools import-mcp` imports its
// tools, each irreversible whatever its annotations claim (shown as hints);
// a call needs approval, and once approved reaches the server once,
// carrying its op_key in _meta; a call the server drops after receiving
// it is recorded unknown and not sent again; once the server changes the
// tool's description and schema, the next call is refused without
// reaching it, until the tool is imported again.
func TestMCPServerAsGovernedTools(t *testing.T) {
	srv := startMCPServer(t, "tok-e2e")
	h := startSteward(t, setup{flags: []string{"--mcp-list-ttl", "0"}})
	admin := newPerson(t, h.url, toolAdminToken)
	tokenFile := writeFile(t, t.TempDir(), "mcp-token", "tok-e2e\n")

	out, _ := admin.run(0, "tools", "import-mcp", "--server", srv.url, "--token-file", tokenFile)
	for _, want := range []string{"send_payment", "lookup_rate", "read-only,open-world", "destructive,open-world", "steward tools register"} {
		if !strings.Contains(out, want) {
			t.Errorf("tools import-mcp does not show %q:\n%s", want, out)
		}
	}
	if _, errs := admin.run(2, "tools", "import-mcp", "--server", srv.url, "--token-file", tokenFile, "--tenant", "acme"); !strings.Contains(errs, `your token is of tenant ""`) {
		t.Errorf("an import for another tenant than the token's: %q", errs)
	}
	if _, errs := admin.run(2, "tools", "import-mcp", "--server", srv.url, "--token-file", tokenFile, "--only", "nothing_such"); !strings.Contains(errs, "lists no such tool") {
		t.Errorf("--only naming a tool the server does not list: %q", errs)
	}
	out, _ = admin.run(0, "tools", "show", "lookup_rate", "-o", "json")
	var lookup stewardv1.Tool
	if err := protojson.Unmarshal([]byte(out), &lookup); err != nil {
		t.Fatalf("tools show -o json: %v\n%s", err, out)
	}
	if k := lookup.Contract; k.EffectClass != stewardv1.EffectClass_EFFECT_CLASS_IRREVERSIBLE || !k.GetMcp().GetHints().GetReadOnly() ||
		!strings.HasPrefix(k.GetMcp().GetSchemaDigest(), "sha256:") || k.GetMcp().GetTokenFile() != tokenFile || !strings.Contains(k.ParametersSchema, `"pair"`) {
		t.Fatalf("a read-only hint is kept as a hint, never the effect class; the schema is pinned: %v", k)
	}

	// Approved, it runs once.
	taskID := mcpTask(t, h, "mcp-1")
	pay := propose(t, h.agent, taskID, "pay-1", "send_payment", map[string]any{"to": "acct:42", "amount": 120})
	approveMCP(t, h, taskID, pay)
	_, done := waitAction(t, h.agent.clients, taskID, pay.ActionId, stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED)
	if !strings.Contains(string(done.Outcome.Result), "paid 120 to acct:42") {
		t.Errorf("the result is not the server's: %s", done.Outcome.Result)
	}
	if got := srv.calls(t, "acct:42"); len(got) != 1 || got[0].Meta["steward/op_key"] != pay.OpKey {
		t.Fatalf("the server received %v, want one call carrying op_key %s in _meta", got, pay.OpKey)
	}

	// Dropped mid-way: unknown, and not sent again.
	dropTask := mcpTask(t, h, "mcp-2")
	drop := propose(t, h.agent, dropTask, "pay-drop", "send_payment", map[string]any{"to": "drop", "amount": 5})
	approveMCP(t, h, dropTask, drop)
	_, lost := waitAction(t, h.agent.clients, dropTask, drop.ActionId, stewardv1.ActionStatus_ACTION_STATUS_UNKNOWN)
	if !strings.Contains(lost.Outcome.GetReason(), "no answer after tools/call was sent") {
		t.Errorf("the unknown outcome's reason: %q", lost.Outcome.GetReason())
	}

	// The server changes the tool: refused, never sent.
	resp, err := http.Post(srv.base+"/change", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	changedTask := mcpTask(t, h, "mcp-3")
	poisoned := propose(t, h.agent, changedTask, "pay-changed", "send_payment", map[string]any{"to": "acct:43", "amount": 1})
	approveMCP(t, h, changedTask, poisoned)
	_, refused := waitAction(t, h.agent.clients, changedTask, poisoned.ActionId, stewardv1.ActionStatus_ACTION_STATUS_FAILED)
	if refused.Outcome.FailureClass != stewardv1.FailureClass_FAILURE_CLASS_DETERMINISTIC || !strings.Contains(refused.Outcome.Reason, "changed since it was imported") {
		t.Errorf("the changed tool's call: %v %q", refused.Outcome.FailureClass, refused.Outcome.Reason)
	}
	if got := srv.calls(t, "acct:43"); len(got) != 0 {
		t.Fatalf("a call to the changed tool reached the server: %v", got)
	}

	// Imported again (a new version, by its digest), it is called.
	admin.run(0, "tools", "import-mcp", "--server", srv.url, "--token-file", tokenFile, "--only", "send_payment")
	again := mcpTask(t, h, "mcp-4")
	pay2 := propose(t, h.agent, again, "pay-again", "send_payment", map[string]any{"to": "acct:44", "amount": 2, "memo": "rent"})
	approveMCP(t, h, again, pay2)
	waitAction(t, h.agent.clients, again, pay2.ActionId, stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED)
	if got := srv.calls(t, "acct:44"); len(got) != 1 {
		t.Fatalf("after the import the server received %d calls, want 1", len(got))
	}
	// By now the dropped call's worker has long moved on: it was sent once.
	if got := srv.calls(t, "drop"); len(got) != 1 {
		t.Fatalf("the dropped call reached the server %d times, want once", len(got))
	}
}
