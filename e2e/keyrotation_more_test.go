package e2e_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"connectrpc.com/connect"

	"github.com/steward-run/steward/examples/calltool"
	"github.com/steward-run/steward/pkg/calltoken"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/stewardtest"
)

// TestTokenFileRotation: the token file is read again when it changes,
// without a restart. With a wire waiting for its approval, the approver's
// token is replaced by a new one: the new token works and the old is
// unauthenticated, with nothing restarted; a file that does not parse
// leaves the tokens as they were; the new token approves, and the wire runs.
func TestTokenFileRotation(t *testing.T) {
	r := newRotation(t, "")
	r.start()
	r.inFlight(map[string]any{"amount": 5})

	const rotated = "approver-token-rotated-0001"
	if err := os.WriteFile(r.tokens, []byte(strings.Replace(tokensFile, approverToken, rotated, 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	fresh := withToken(r.p.url, rotated)
	pending := func(c authed) error {
		_, err := c.governance.ListApprovals(context.Background(), connect.NewRequest(&stewardv1.ListApprovalsRequest{TaskId: r.taskID, PendingOnly: true}))
		return err
	}
	stewardtest.Eventually(t, 15*time.Second, func() (bool, string) {
		err := pending(fresh)
		return err == nil, fmt.Sprintf("the new token is not taken yet: %v", err)
	})
	if err := pending(r.approver); connect.CodeOf(err) != connect.CodeUnauthenticated {
		t.Fatalf("the withdrawn token: %v; want unauthenticated", err)
	}

	if err := os.WriteFile(r.tokens, []byte(`{"tokens": [{"token": "short"}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	stewardtest.Eventually(t, 15*time.Second, func() (bool, string) {
		return strings.Contains(r.p.logged(), "token file not reloaded"), "the broken token file was never refused"
	})
	if err := pending(fresh); err != nil {
		t.Fatalf("after a broken token file, the tokens changed: %v", err)
	}
	r.approveAs(fresh)
}

// TestCallKeyRotation: the call key rotates without a tool refusing a call.
// Execution first publishes the next key beside the signing one; a tool
// fetches the JWKS then, once. Execution restarts signing with the next key
// and publishing the old one. The wire, waiting for its approval across
// the restart, is called with a token of the new key, which the tool —
// holding the keys it fetched before the switch — accepts.
func TestCallKeyRotation(t *testing.T) {
	var guarded atomic.Pointer[http.Handler]
	var tool *stewardtest.Tool
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		h := guarded.Load()
		if h == nil || req.URL.Path != "/wire" {
			tool.Config.Handler.ServeHTTP(w, req)
			return
		}
		(*h).ServeHTTP(w, req)
	}))
	t.Cleanup(front.Close)
	r := newRotation(t, front.URL+"/wire")
	tool = r.tool
	oldKey, oldPub, _ := rotationKeyFiles(t, r.dir, "call-old")
	newKey, newPub, newPublic := rotationKeyFiles(t, r.dir, "call-new")
	r.start("--call-key", oldKey, "--call-key-published", newPub)
	h, err := calltool.Protect(context.Background(), r.p.url, front.URL+"/wire", tool.Config.Handler)
	if err != nil {
		t.Fatal(err)
	}
	guarded.Store(&h)
	r.inFlight(map[string]any{"amount": 5})

	r.start("--call-key", newKey, "--call-key-published", oldPub)
	resp, err := http.Get(r.p.url + calltoken.WellKnownPath)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var set struct{ Keys []struct{ Kid string } }
	if err := json.NewDecoder(resp.Body).Decode(&set); err != nil || len(set.Keys) != 2 || set.Keys[0].Kid != calltoken.KeyID(newPublic) {
		t.Fatalf("the JWKS after the switch: %+v, %v; want the new key, then the old", set, err)
	}
	r.approve()
	if n := len(tool.Worked()); n != 1 {
		t.Errorf("the tool did %d pieces of work; want the wire's", n)
	}
}

// TestWebhookSecretRotation: a sink's secrets rotate without a gap. A wire
// waits for its approval, announced under the old secret; the sinks file
// lists the new secret beside the old, and the task's end is signed under
// both (a receiver of either accepts it); the file drops the old, and the
// next announcement verifies under the new secret only.
func TestWebhookSecretRotation(t *testing.T) {
	requireTools(t, "python3")
	python, _ := exec.LookPath("python3")
	const (
		oldSecret = "whsec_c3Rld2FyZCBvbGQgd2ViaG9vayBzZWNyZXQ="
		newSecret = "whsec_c3Rld2FyZCBuZXcgd2ViaG9vayBzZWNyZXQ="
	)
	sink := startReceiver(t)
	r := newRotation(t, "")
	sinks := func(secrets ...string) {
		t.Helper()
		quoted := `"` + strings.Join(secrets, `", "`) + `"`
		if err := os.WriteFile(r.dir+"/sinks.json", []byte(fmt.Sprintf(`{"sinks": [{"name": "ops", "url": %q, "secrets": [%s]}]}`, sink.srv.URL, quoted)), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	running := func(n int) {
		t.Helper()
		stewardtest.Eventually(t, 30*time.Second, func() (bool, string) {
			got := strings.Count(r.p.logged(), "notify: sink running")
			return got >= n, fmt.Sprintf("the sink has started %d times; want %d", got, n)
		})
	}
	sinks(oldSecret)
	r.start("--notify", r.dir+"/sinks.json", "--log-level", "info")
	running(1)
	r.inFlight(map[string]any{"amount": 5})
	checkSignature(t, python, sink.waitTaken(t, "ops", "approval.requested", r.taskID), oldSecret, true)

	sinks(newSecret, oldSecret)
	running(2)
	if _, err := r.agent.tasks.CancelTask(context.Background(), connect.NewRequest(&stewardv1.CancelTaskRequest{TaskId: r.taskID, Reason: "rotation drill"})); err != nil {
		t.Fatal(err)
	}
	ended := sink.waitTaken(t, "ops", "task.ended", r.taskID)
	checkSignature(t, python, ended, newSecret, true)
	checkSignature(t, python, ended, oldSecret, true)

	sinks(newSecret)
	running(3)
	r.taskID = governedTask(t, r.agent, "rotation-2")
	propose(t, r.agent, r.taskID, "wire-2", "wire", map[string]any{"amount": 6})
	next := sink.waitTaken(t, "ops", "approval.requested", r.taskID)
	checkSignature(t, python, next, newSecret, true)
	checkSignature(t, python, next, oldSecret, false)
}
