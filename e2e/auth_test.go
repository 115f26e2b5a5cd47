package e2e_test

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"connectrpc.com/connect"

	"github.com/steward-run/steward/cmd/steward/app"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/gen/steward/v1/stewardv1connect"
	"github.com/steward-run/steward/pkg/rpc"
)

// TestRoleTableEnforced calls the real binary, started with --auth, as
// callers the role table (docs/roles.md) refuses and allows: an agent
// refused the operator commands, a stranger refused steering someone
// else's task, each told which role or party the call needs; the task's
// own agent and an operator steer it; an admin passes every rule.
func TestRoleTableEnforced(t *testing.T) {
	h := startSteward(t, setup{})
	ctx := context.Background()
	taskID := h.create(t, "roles-1", contract())

	denied := func(t *testing.T, what string, err error, says ...string) {
		t.Helper()
		if connect.CodeOf(err) != connect.CodePermissionDenied {
			t.Fatalf("%s: %v, want permission_denied", what, err)
		}
		for _, w := range says {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %v, want it to name %q", what, err, w)
			}
		}
	}

	t.Run("the agent may not run Steward", func(t *testing.T) {
		_, err := toolClient(h.url, agentToken).RegisterTool(ctx, connect.NewRequest(&stewardv1.RegisterToolRequest{Contract: &stewardv1.ToolContract{Name: "mine", Version: "1.0.0"}}))
		denied(t, "RegisterTool by the agent", err, "agent:summariser", "ToolService/RegisterTool", "tool-admin")
		_, err = h.agent.tasks.RaiseBudget(ctx, connect.NewRequest(&stewardv1.RaiseBudgetRequest{TaskId: taskID, MaxCostMicros: 5000, Reason: "I want more"}))
		denied(t, "RaiseBudget by the agent", err, "budget-owner")
		_, err = actionClient(h.url, agentToken).SettleAction(ctx, connect.NewRequest(&stewardv1.SettleActionRequest{TaskId: taskID, ActionId: "act-x", State: stewardv1.SettleState_SETTLE_STATE_SUCCEEDED, Reason: "trust me"}))
		denied(t, "SettleAction by the agent", err, "operator")
		_, err = h.agent.governance.RenewCredential(ctx, connect.NewRequest(&stewardv1.RenewCredentialRequest{TaskId: taskID, Reason: "more time"}))
		denied(t, "RenewCredential by the agent", err, "operator")
	})

	t.Run("a stranger may not steer another's task", func(t *testing.T) {
		_, err := h.viewer.tasks.PauseTask(ctx, connect.NewRequest(&stewardv1.PauseTaskRequest{TaskId: taskID, Reason: "mine now"}))
		denied(t, "PauseTask by user:cy", err, "user:cy", "TaskService/PauseTask", taskID, "operator", "agent:summariser")
		_, err = h.viewer.tasks.CancelTask(ctx, connect.NewRequest(&stewardv1.CancelTaskRequest{TaskId: taskID, Reason: "mine now"}))
		denied(t, "CancelTask by user:cy", err, "operator")
		_, err = h.viewer.tasks.FailTask(ctx, connect.NewRequest(&stewardv1.FailTaskRequest{TaskId: taskID, Reason: "mine now"}))
		denied(t, "FailTask by user:cy", err, "operator")
		// An approver holds a role, but not one steering needs.
		_, err = h.approver.tasks.PauseTask(ctx, connect.NewRequest(&stewardv1.PauseTaskRequest{TaskId: taskID, Reason: "mine now"}))
		denied(t, "PauseTask by user:bo", err, "operator")
		if tk := waitStatus(t, h.agent.clients, taskID, stewardv1.TaskStatus_TASK_STATUS_RUNNING); tk.Status != stewardv1.TaskStatus_TASK_STATUS_RUNNING {
			t.Fatalf("after refused steering the task is %v", tk.Status)
		}
	})

	t.Run("its agent and an operator steer it", func(t *testing.T) {
		if _, err := h.agent.tasks.PauseTask(ctx, connect.NewRequest(&stewardv1.PauseTaskRequest{TaskId: taskID, Reason: "waiting for data"})); err != nil {
			t.Fatalf("PauseTask by its agent: %v", err)
		}
		if _, err := h.operator.tasks.ResumeTask(ctx, connect.NewRequest(&stewardv1.ResumeTaskRequest{TaskId: taskID})); err != nil {
			t.Fatalf("ResumeTask by an operator: %v", err)
		}
	})

	t.Run("an admin passes every rule", func(t *testing.T) {
		admin := withToken(h.url, adminToken)
		if _, err := admin.tasks.PauseTask(ctx, connect.NewRequest(&stewardv1.PauseTaskRequest{TaskId: taskID, Reason: "maintenance"})); err != nil {
			t.Fatalf("PauseTask by an admin: %v", err)
		}
		// Past the role check, the request itself is judged.
		_, err := actionClient(h.url, adminToken).SettleAction(ctx, connect.NewRequest(&stewardv1.SettleActionRequest{TaskId: taskID, ActionId: "act-x", State: stewardv1.SettleState_SETTLE_STATE_SUCCEEDED}))
		if c := connect.CodeOf(err); c == connect.CodePermissionDenied || c == connect.CodeUnauthenticated || err == nil {
			t.Fatalf("SettleAction without a reason by an admin: %v, want it refused for the request, not the caller", err)
		}
	})
}

// TestDefaultDevIsSecure starts `steward dev` as the README does — no
// --auth, no --insecure — twice on one data directory: the first start
// creates DATA/tokens.json (0600, four tokens) and says how to use it,
// refuses calls without a token (the Steward-Principal header included)
// and serves /healthz and /metrics without one; the second start reuses
// the file silently, unchanged. The CLI, run where the data directory is
// the default, presents the admin token by itself.
func TestDefaultDevIsSecure(t *testing.T) {
	root := t.TempDir()
	data := filepath.Join(root, app.DefaultDataDir)
	args := []string{"dev", "--addr", "127.0.0.1:0", "--data", data, "--log-level", "warn"}
	p := startCommand(t, nil, args...)
	path := filepath.Join(data, app.TokensFileName)
	if out := p.printed(); !strings.Contains(out, "created "+path) || !strings.Contains(out, "Authorization: Bearer") {
		t.Errorf("first start printed %q; want it to name %s and show how to use a token", out, path)
	}
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if info.Mode().Perm() != 0o600 {
		t.Errorf("%s has mode %v, want 0600", path, info.Mode().Perm())
	}
	first, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Tokens []struct {
			Token     string   `json:"token"`
			Principal string   `json:"principal"`
			Roles     []string `json:"roles"`
		} `json:"tokens"`
	}
	if err := json.Unmarshal(first, &f); err != nil {
		t.Fatal(err)
	}
	roles := map[string]string{}
	for _, tk := range f.Tokens {
		roles[tk.Principal] = strings.Join(tk.Roles, ",")
		if len(tk.Token) < 32 {
			t.Errorf("%s's token %q is short", tk.Principal, tk.Token)
		}
	}
	want := map[string]string{"user:admin": "admin", "agent:dev": "", "user:approver": "authorizer", "user:operator": "operator"}
	if len(roles) != len(want) {
		t.Errorf("tokens for %v, want %v", roles, want)
	}
	for who, r := range want {
		if got, ok := roles[who]; !ok || got != r {
			t.Errorf("%s has roles %q (present %v), want %q", who, got, ok, r)
		}
	}

	ctx := context.Background()
	list := func(c stewardv1connect.QueryServiceClient) error {
		_, err := c.ListTasks(ctx, connect.NewRequest(&stewardv1.ListTasksRequest{}))
		return err
	}
	if err := list(newClients(p.url).query); connect.CodeOf(err) != connect.CodeUnauthenticated {
		t.Errorf("a call without a token: %v, want unauthenticated", err)
	}
	header := stewardv1connect.NewQueryServiceClient(http.DefaultClient, p.url, connect.WithInterceptors(principalHeader("user:ana")))
	if err := list(header); connect.CodeOf(err) != connect.CodeUnauthenticated {
		t.Errorf("a call naming itself in %s: %v, want unauthenticated", rpc.PrincipalHeader, err)
	}
	if err := list(withToken(p.url, f.Tokens[1].Token).query); err != nil {
		t.Errorf("a call with the agent's token: %v", err)
	}
	for _, path := range []string{"/healthz", "/metrics"} {
		resp, err := http.Get(p.url + path)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("GET %s without a token = %d, want 200", path, resp.StatusCode)
		}
	}

	receipt := func(dir string) string {
		cmd := exec.Command(binary, "receipt", "--addr", p.url, "--task", "no-such-task")
		cmd.Dir = dir
		out, _ := cmd.CombinedOutput()
		return string(out)
	}
	if out := receipt(root); !strings.Contains(out, "not_found") {
		t.Errorf("steward receipt beside the dev data directory said %q; want not_found, past authentication", out)
	}
	if out := receipt(t.TempDir()); !strings.Contains(out, "unauthenticated") {
		t.Errorf("steward receipt elsewhere, without a token, said %q; want unauthenticated", out)
	}

	p.stop(t)
	p = startCommand(t, nil, args...)
	if out := p.printed(); strings.Contains(out, "created") || strings.Contains(out, "Bearer") {
		t.Errorf("second start printed %q; want nothing about tokens", out)
	}
	if again, err := os.ReadFile(path); err != nil || string(again) != string(first) {
		t.Errorf("the second start rewrote %s (%v)", path, err)
	}
	if err := list(withToken(p.url, f.Tokens[1].Token).query); err != nil {
		t.Errorf("after a restart, a call with the agent's token: %v", err)
	}
}

// TestInsecureWarnsAtEveryStart starts `steward dev --insecure` twice: each
// start logs the warning, makes no token file, and trusts the
// Steward-Principal header.
func TestInsecureWarnsAtEveryStart(t *testing.T) {
	data := filepath.Join(t.TempDir(), "data")
	for i := range 2 {
		var logs strings.Builder
		m := app.NewServer(io.Discard, &logs)
		if err := m.ParseFlags("dev", []string{"--addr", "127.0.0.1:0", "--data", data, "--log-level", "warn", "--insecure"}); err != nil {
			t.Fatal(err)
		}
		if err := m.Run(context.Background()); err != nil {
			t.Fatal(err)
		}
		header := stewardv1connect.NewQueryServiceClient(http.DefaultClient, m.URL(), connect.WithInterceptors(principalHeader("user:ana")))
		_, err := header.ListTasks(context.Background(), connect.NewRequest(&stewardv1.ListTasksRequest{}))
		m.Close()
		if err != nil {
			t.Errorf("start %d: a call naming itself: %v", i+1, err)
		}
		if !strings.Contains(logs.String(), "level=WARN") || !strings.Contains(logs.String(), "--insecure") {
			t.Errorf("start %d logged %q; want a warning about --insecure", i+1, logs.String())
		}
	}
	if _, err := os.Stat(filepath.Join(data, app.TokensFileName)); !os.IsNotExist(err) {
		t.Errorf("--insecure made a token file: %v", err)
	}
}

// TestServeNeedsAuthOrInsecure: a plane in serve mode does not fall back to
// the open mode by itself, and the open mode is not given together with
// tokens or JWTs; JWTs need an audience; TLS needs a certificate and its
// key.
func TestServeNeedsAuthOrInsecure(t *testing.T) {
	auth := writeFile(t, t.TempDir(), "tokens.json", tokensFile)
	for _, tc := range []struct {
		mode string
		args []string
		says []string
	}{
		{"serve", []string{"--plane=state", "--nats=nats://127.0.0.1:4222"}, []string{"--auth, --jwt-jwks/--jwt-issuer or --insecure is required"}},
		{"serve", []string{"--plane=state", "--nats=nats://127.0.0.1:4222", "--jwt-jwks", "keys.json"}, []string{"--jwt-audience is required"}},
		{"dev", []string{"--jwt-audience", "steward"}, []string{"--jwt-audience needs --jwt-jwks FILE or --jwt-issuer URL"}},
		{"dev", []string{"--jwt-issuer", "https://id.example.test", "--jwt-audience", "steward", "--insecure"}, []string{"and --insecure"}},
		{"dev", []string{"--tls-cert", "cert.pem"}, []string{"--tls-cert and --tls-key go together"}},
		{"dev", []string{"--jwt-issuer", "http://id.example.test", "--jwt-audience", "steward"}, []string{"over https only"}},
		{"serve", []string{"--plane=state", "--nats=nats://127.0.0.1:4222", "--auth", auth, "--insecure"}, []string{"--auth and --insecure"}},
		{"dev", []string{"--auth", auth, "--insecure"}, []string{"--auth and --insecure"}},
	} {
		err := app.NewServer(io.Discard, io.Discard).ParseFlags(tc.mode, tc.args)
		for _, w := range tc.says {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("%s %v: %v, want it to say %q", tc.mode, tc.args, err, w)
			}
		}
	}
	for _, args := range [][]string{
		{"--plane=state", "--nats=nats://127.0.0.1:4222", "--auth", auth},
		{"--plane=state", "--nats=nats://127.0.0.1:4222", "--insecure"},
		{"--plane=state", "--nats=nats://127.0.0.1:4222", "--jwt-issuer", "https://id.example.test", "--jwt-audience", "steward"},
	} {
		if err := app.NewServer(io.Discard, io.Discard).ParseFlags("serve", args); err != nil {
			t.Errorf("serve %v: %v", args, err)
		}
	}
}

// TestATokenFileOthersMayReadIsWarnedOf: a token file other users of the
// machine may read hands them every token in it; each start says so.
func TestATokenFileOthersMayReadIsWarnedOf(t *testing.T) {
	dir := t.TempDir()
	auth := writeFile(t, dir, "tokens.json", tokensFile)
	for _, mode := range []os.FileMode{0o644, 0o600} {
		if err := os.Chmod(auth, mode); err != nil {
			t.Fatal(err)
		}
		var logs strings.Builder
		m := app.NewServer(io.Discard, &logs)
		if err := m.ParseFlags("dev", []string{"--addr", "127.0.0.1:0", "--data", filepath.Join(dir, "data"), "--log-level", "warn", "--auth", auth}); err != nil {
			t.Fatal(err)
		}
		if err := m.Run(context.Background()); err != nil {
			t.Fatal(err)
		}
		m.Close()
		if warned := strings.Contains(logs.String(), "readable by other users"); warned != (mode == 0o644) {
			t.Errorf("a token file of mode %v: logged %q", mode, logs.String())
		}
	}
}

// TestOpenModeOnLoopbackAnswersThisMachineOnly: a web page whose name an
// attacker points at 127.0.0.1 (DNS rebinding) reaches a server on this
// machine from the browser, as its own origin; in the open mode, which
// trusts whoever calls, such a call is refused by its Host.
func TestOpenModeOnLoopbackAnswersThisMachineOnly(t *testing.T) {
	m := app.NewServer(io.Discard, io.Discard)
	if err := m.ParseFlags("dev", []string{"--addr", "127.0.0.1:0", "--data", filepath.Join(t.TempDir(), "data"), "--log-level", "error", "--insecure"}); err != nil {
		t.Fatal(err)
	}
	if err := m.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Close)
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(m.URL(), "http://"))
	for host, want := range map[string]int{
		"evil.example:" + port: http.StatusMisdirectedRequest,
		"localhost:" + port:    http.StatusOK,
		"127.0.0.1:" + port:    http.StatusOK,
		"[::1]:" + port:        http.StatusOK,
	} {
		req, err := http.NewRequest(http.MethodPost, m.URL()+"/steward.v1.QueryService/ListTasks", strings.NewReader(`{}`))
		if err != nil {
			t.Fatal(err)
		}
		req.Host = host
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set(rpc.PrincipalHeader, "user:ana")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("Host %s: %d, want %d", host, resp.StatusCode, want)
		}
	}
}
