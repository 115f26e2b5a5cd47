package e2e_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/steward-run/steward/pkg/stewardtest"
)

// TestPythonClient runs the Python client's tests (sdk/python) with the
// system python3 against the real binary: as an agent, through a proxy
// that loses the answer to a committed ProposeAction, and directly.
// Under CI=true a missing python3 fails the test; elsewhere it skips.
func TestPythonClient(t *testing.T) {
	python, err := exec.LookPath("python3")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("python3 is required in CI: %v", err)
		}
		t.Skipf("no python3: %v", err)
	}
	tool := stewardtest.StartTool(t)
	h := startSteward(t, setup{tools: governedTools(tool)})
	lossy := &dropFirstProposal{tb: t, steward: h.url}
	lossy.proxy = httputil.NewSingleHostReverseProxy(mustParseURL(t, h.url))
	proxy := httptest.NewServer(lossy)
	t.Cleanup(proxy.Close)

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, python, "-m", "unittest", "discover", "-v")
	cmd.Dir = "../sdk/python"
	cmd.Env = append(os.Environ(),
		"STEWARD_URL="+h.url,
		"STEWARD_PROXY_URL="+proxy.URL,
		"STEWARD_TOKEN="+agentToken,
		"PYTHONDONTWRITEBYTECODE=1",
	)
	out, err := cmd.CombinedOutput()
	t.Logf("python3 -m unittest discover:\n%s", out)
	if err != nil {
		t.Fatalf("the Python tests failed: %v", err)
	}
	// Every test ran against Steward: none was skipped for want of it.
	if strings.Contains(string(out), "skipped") {
		t.Fatal("some Python tests were skipped")
	}
	proposals, dropped := lossy.counts()
	if dropped != 1 || proposals < 2 {
		t.Fatalf("the proxy saw %d proposals and dropped %d answers; want the first dropped and a retry after it", proposals, dropped)
	}
}

// dropFirstProposal forwards every call to Steward, but the first
// ProposeAction it forwards whole, waits for Steward's answer — so the
// proposal is committed — and closes the connection without answering.
type dropFirstProposal struct {
	tb      testing.TB
	steward string
	proxy   *httputil.ReverseProxy

	mu                 sync.Mutex
	proposals, dropped int
}

func (p *dropFirstProposal) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/steward.v1.TaskService/ProposeAction" {
		p.proxy.ServeHTTP(w, r)
		return
	}
	p.mu.Lock()
	p.proposals++
	first := p.proposals == 1
	p.mu.Unlock()
	if !first {
		p.proxy.ServeHTTP(w, r)
		return
	}
	req, err := http.NewRequestWithContext(r.Context(), r.Method, p.steward+r.URL.Path, r.Body)
	if err != nil {
		p.tb.Error(err)
		return
	}
	req.Header = r.Header.Clone()
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		p.tb.Errorf("forward the first proposal: %v", err)
		return
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		p.tb.Errorf("Steward refused the first proposal: HTTP %d %s", resp.StatusCode, body)
	}
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		p.tb.Errorf("hijack: %v", err)
		return
	}
	conn.Close()
	p.mu.Lock()
	p.dropped++
	p.mu.Unlock()
}

func (p *dropFirstProposal) counts() (proposals, dropped int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.proposals, p.dropped
}

func mustParseURL(tb testing.TB, s string) *url.URL {
	tb.Helper()
	u, err := url.Parse(s)
	if err != nil {
		tb.Fatal(err)
	}
	return u
}
