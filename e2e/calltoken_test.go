package e2e_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/steward-run/steward/examples/calltool"
	"github.com/steward-run/steward/pkg/calltoken"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/stewardtest"
)

// TestToolsVerifyTheCallToken runs the binary against a tool guarded by
// examples/calltool, the code docs/calltokens.md shows: the tool fetches
// the key Steward publishes, takes a real call whose token names the
// action, its request hash and its attempt, and refuses that token used
// again, the same token over another body, a token with a claim changed,
// and a request with none.
func TestToolsVerifyTheCallToken(t *testing.T) {
	tool := stewardtest.StartTool(t)
	var guarded atomic.Pointer[http.Handler]
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if h := guarded.Load(); h != nil {
			(*h).ServeHTTP(w, r)
			return
		}
		http.Error(w, "not ready", http.StatusServiceUnavailable)
	}))
	t.Cleanup(front.Close)
	toolURL := front.URL + "/search"
	tools := writeFile(t, t.TempDir(), "tools.json", fmt.Sprintf(`{"tools": [{"name": "search", "version": "1", "effectClass": "EFFECT_CLASS_READ",
	  "dataSensitivity": "DATA_SENSITIVITY_INTERNAL", "http": {"url": %q}}]}`, toolURL))
	data := t.TempDir()
	p := startBinary(t, data, "--tools", tools)

	// What the tool took: each request that passed, with its claims.
	var mu sync.Mutex
	var took []*http.Request
	var bodies [][]byte
	var claims []*calltoken.Claims
	inner := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		c, _ := calltoken.FromContext(r.Context())
		mu.Lock()
		took, bodies, claims = append(took, r.Clone(context.Background())), append(bodies, body), append(claims, c)
		mu.Unlock()
		r.Body = io.NopCloser(bytes.NewReader(body))
		tool.Config.Handler.ServeHTTP(w, r)
	})
	h, err := calltool.Protect(context.Background(), p.url, toolURL, inner)
	if err != nil {
		t.Fatal(err)
	}
	guarded.Store(&h)

	c := newClients(p.url)
	taskID := createTask(t, c, "call-token").Contract.TaskId
	waitStarted(t, c, taskID)
	a := propose(t, authed{clients: c}, taskID, "s", "search", map[string]any{"q": "incidents"})
	_, a = waitAction(t, c, taskID, a.ActionId, stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED)
	mu.Lock()
	if len(took) != 1 {
		t.Fatalf("the tool took %d requests; want the one call", len(took))
	}
	call, body, got := took[0], bodies[0], claims[0]
	mu.Unlock()
	if got == nil || got.ActionID != a.ActionId || got.TaskID != taskID || got.OpKey != a.OpKey || got.RequestHash != a.RequestHash ||
		got.Attempt != 1 || got.Tool != "search" || got.Audience != toolURL {
		t.Fatalf("the call's token says %+v; want action %s, task %s, op_key %s, request_hash %s, attempt 1, tool search, aud %s",
			got, a.ActionId, taskID, a.OpKey, a.RequestHash, toolURL)
	}

	token := call.Header.Get(calltoken.Header)
	changed := changeClaim(t, token, "action_id", "act-other")
	for _, tc := range []struct {
		name, token, want string
		body              []byte
	}{
		{"replayed", token, "used before", body},
		{"another body", token, "body_hash", []byte(`{"params":{"q":"salaries"}}`)},
		{"a claim changed", changed, "signature", body},
		{"no token", "", "no Steward-Call-Token", body},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest(http.MethodPost, toolURL, bytes.NewReader(tc.body))
			req.Header = call.Header.Clone()
			req.Header.Set(calltoken.Header, tc.token)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			msg, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(string(msg), tc.want) {
				t.Errorf("the tool answered %s %s; want 401 saying %q", resp.Status, msg, tc.want)
			}
		})
	}
	if n := tool.CallsTo("/search"); n != 1 {
		t.Errorf("the tool's work saw %d requests; want only Steward's one", n)
	}
	checkPublishedKeys(t, p.url, data)
	checkSnippet(t)
}

// changeClaim returns token with one claim of its payload set to value,
// and its signature kept.
func changeClaim(t *testing.T, token, claim, value string) string {
	t.Helper()
	parts := strings.Split(token, ".")
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(payload, &m); err != nil {
		t.Fatal(err)
	}
	m[claim] = value
	payload, _ = json.Marshal(m)
	parts[1] = base64.RawURLEncoding.EncodeToString(payload)
	return strings.Join(parts, ".")
}

// checkPublishedKeys: the JWKS the server serves is the one in the data
// directory.
func checkPublishedKeys(t *testing.T, url, data string) {
	t.Helper()
	resp, err := http.Get(url + calltoken.WellKnownPath)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	served, _ := io.ReadAll(resp.Body)
	file, err := os.ReadFile(filepath.Join(data, "call-keys.json"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(bytes.TrimSpace(served), bytes.TrimSpace(file)) {
		t.Errorf("the server publishes\n%s\nand the data directory holds\n%s", served, file)
	}
}

// checkSnippet: docs/calltokens.md shows the code this test ran.
func checkSnippet(t *testing.T) {
	t.Helper()
	src, err := os.ReadFile("../examples/calltool/calltool.go")
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile("../docs/calltokens.md")
	if err != nil {
		t.Fatal(err)
	}
	_, code, _ := strings.Cut(string(src), "import (")
	if !strings.Contains(string(doc), "import ("+code) {
		t.Errorf("docs/calltokens.md does not show examples/calltool/calltool.go from its imports on")
	}
}
