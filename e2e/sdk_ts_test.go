package e2e_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/steward-run/steward/pkg/stewardtest"
)

// TestTypeScriptClient runs the TypeScript client's tests (sdk/ts, under
// node --test) against the real binary, through a proxy that lets the
// first ProposeAction commit and then drops its answer: the client's
// retry, with the same proposal id, must leave one action; and the
// agent's calls (test/agent.test.js: a watch cut mid-stream by a proxy of
// its own, heartbeats, the commands' ids) directly. Without node
// or npm the test is skipped, and fails under CI=true.
func TestTypeScriptClient(t *testing.T) {
	requireTools(t, "node", "npm")
	sdk, err := filepath.Abs("../sdk/ts")
	if err != nil {
		t.Fatal(err)
	}
	tool := stewardtest.StartTool(t)
	// slow does its work and never answers in time: its action stays
	// dispatched, so proposeAndWait's timeout is what ends the wait.
	tool.Always("/slow", stewardtest.Late)
	tools := append(governedTools(tool), fmt.Sprintf(`{"name": "slow", "version": "1.0.0", "effectClass": "EFFECT_CLASS_READ",
	   "dataSensitivity": "DATA_SENSITIVITY_INTERNAL", "timeout": "60s", "http": {"url": %q}}`, tool.URL+"/slow"))
	h := startSteward(t, setup{tools: tools})
	proxy := startDropProxy(t, h.url, "/steward.v1.TaskService/ProposeAction")

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	installTypeScriptClient(ctx, t)
	runNode(ctx, t, sdk, []string{"STEWARD_URL=" + proxy.URL, "STEWARD_DIRECT_URL=" + h.url, "STEWARD_TOKEN=" + agentToken},
		"node", "--test", "test/retry.test.js", "test/steward.test.js", "test/agent.test.js")

	if n := proxy.dropped(); n != 1 {
		t.Fatalf("the proxy dropped %d answers, want 1: the retry was not tested", n)
	}
}

// runNode runs name with args in dir, env added, and fails the test with its
// output if it fails; the output goes to the test log either way.
func runNode(ctx context.Context, t *testing.T, dir string, env []string, name string, args ...string) {
	t.Helper()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	t.Logf("%s %s:\n%s", name, strings.Join(args, " "), out)
	if err != nil {
		t.Fatalf("%s %s: %v", name, strings.Join(args, " "), err)
	}
}

// dropProxy forwards every request to Steward, except that it forwards
// the first request to one path, lets Steward answer it (the command
// commits), and closes the caller's connection without the answer.
type dropProxy struct {
	*httptest.Server
	mu    sync.Mutex
	drops int
}

func (p *dropProxy) dropped() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.drops
}

func startDropProxy(t *testing.T, target, path string) *dropProxy {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	forward := httputil.NewSingleHostReverseProxy(u)
	p := &dropProxy{}
	p.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		drop := r.URL.Path == path && p.drops == 0
		if drop {
			p.drops++
		}
		p.mu.Unlock()
		if !drop {
			forward.ServeHTTP(w, r)
			return
		}
		body, err := io.ReadAll(r.Body)
		if err != nil {
			t.Errorf("proxy: read the request: %v", err)
			return
		}
		req, err := http.NewRequestWithContext(r.Context(), r.Method, target+r.URL.RequestURI(), bytes.NewReader(body))
		if err != nil {
			t.Errorf("proxy: %v", err)
			return
		}
		req.Header = r.Header.Clone()
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Errorf("proxy: forward the request: %v", err)
			return
		}
		answer, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		t.Logf("proxy: Steward answered %s with %d (%d bytes); dropping it", path, resp.StatusCode, len(answer))
		conn, _, err := http.NewResponseController(w).Hijack()
		if err != nil {
			t.Errorf("proxy: hijack: %v", err)
			return
		}
		conn.Close()
	}))
	t.Cleanup(p.Close)
	return p
}
