package e2e_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/steward-run/steward/pkg/stewardtest"
	"github.com/steward-run/steward/services/state/notify"
)

// receiver is a webhook sink: it keeps every request it gets, and answers
// 503 while failing.
type receiver struct {
	srv     *httptest.Server
	failing atomic.Bool
	mu      sync.Mutex
	got     []delivery // every request, answered or not
}

type delivery struct {
	header   http.Header
	body     []byte
	answered int
	note     notify.Notification
}

func startReceiver(t *testing.T) *receiver {
	r := &receiver{}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		d := delivery{header: req.Header.Clone(), body: body, answered: http.StatusNoContent}
		if r.failing.Load() {
			d.answered = http.StatusServiceUnavailable
		}
		if err := json.Unmarshal(body, &d.note); err != nil {
			t.Errorf("a notification that is not JSON: %v: %s", err, body)
		}
		r.mu.Lock()
		r.got = append(r.got, d)
		r.mu.Unlock()
		w.WriteHeader(d.answered)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

// taken returns the notifications r answered 2xx, of kind on task.
func (r *receiver) taken(kind, taskID string) []delivery {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []delivery
	for _, d := range r.got {
		if d.answered/100 == 2 && d.note.Kind == kind && d.note.TaskID == taskID {
			out = append(out, d)
		}
	}
	return out
}

func (r *receiver) all() []delivery {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]delivery(nil), r.got...)
}

// waitTaken waits until r has taken a notification of kind on task.
func (r *receiver) waitTaken(t *testing.T, name, kind, taskID string) delivery {
	t.Helper()
	var got []delivery
	stewardtest.Eventually(t, time.Minute, func() (bool, string) {
		got = r.taken(kind, taskID)
		return len(got) > 0, fmt.Sprintf("sink %s has taken no %s of task %s (%d requests in all)", name, kind, taskID, len(r.all()))
	})
	return got[0]
}

const (
	approversSecret = "whsec_c3Rld2FyZCBhcHByb3ZlcnMgc2VjcmV0IQ=="
	flakySecret     = "whsec_c3Rld2FyZCBmbGFreSBzaW5rIHNlY3JldCE="
	acmeSecret      = "whsec_c3Rld2FyZCBhY21lIHNpbmsgc2VjcmV0ISE="
)

// TestNotificationsReachTheirSinks runs the binary with three sinks: an
// operator's for approvals, one that fails until told otherwise, and
// acme's. An approval requested reaches the first, signed as the docs'
// snippet checks (run as written; a changed body fails it), with what an
// approver needs; the failing sink gets it once it answers, while the
// first has had its own meanwhile; a kill -9 and a restart lose none, and
// every copy of one carries the same id; acme's sink gets acme's and
// nothing of the default tenant's.
func TestNotificationsReachTheirSinks(t *testing.T) {
	requireTools(t, "python3")
	python, _ := exec.LookPath("python3")
	tool := stewardtest.StartTool(t)
	approvers, flaky, acme := startReceiver(t), startReceiver(t), startReceiver(t)
	flaky.failing.Store(true)
	dir := t.TempDir()
	sinks := writeFile(t, dir, "sinks.json", fmt.Sprintf(`{"sinks": [
	  {"name": "approvers", "url": %q, "kinds": ["approval.requested"], "secrets": [%q]},
	  {"name": "flaky", "url": %q, "kinds": ["approval.requested"], "secrets": [%q]},
	  {"name": "acme", "url": %q, "tenant": "acme", "secrets": [%q]}]}`,
		approvers.srv.URL, approversSecret, flaky.srv.URL, flakySecret, acme.srv.URL, acmeSecret))
	h := startSteward(t, setup{tools: governedTools(tool), flags: []string{"--notify", sinks}})

	first := governedTask(t, h.agent, "notify-1")
	propose(t, h.agent, first, "wire-1", "wire", map[string]any{"amount": 5})
	got := approvers.waitTaken(t, "approvers", "approval.requested", first)
	checkApprovalNotification(t, got)
	// Its act is the CLI's: the first command runs as written and shows
	// the hash the decision binds to.
	if act := strings.Fields(strings.Split(got.note.Act, ";")[0]); len(act) < 2 || act[0] != "steward" {
		t.Errorf("act %q is not a steward command", got.note.Act)
	} else if out, _ := newPerson(t, h.url, adminToken).run(0, act[1:]...); !strings.Contains(out, "hash:") {
		t.Errorf("%q printed no hash:\n%s", got.note.Act, out)
	}
	checkSignature(t, python, got, approversSecret, true)
	tampered := got
	tampered.body = bytes.Replace(got.body, []byte(`"amount`), []byte(`"Amount`), 1)
	checkSignature(t, python, tampered, approversSecret, false)
	// The flaky sink has been tried, and refused it, while the first got
	// its own.
	stewardtest.Eventually(t, time.Minute, func() (bool, string) {
		return len(flaky.all()) > 0, "the failing sink was never tried"
	})

	// A kill -9 with the flaky sink's notification not yet taken, and a
	// second approval after the restart.
	h.proc.kill()
	p := startBinary(t, filepath.Join(h.dir, "data"), "--tools", filepath.Join(h.dir, "tools.json"), "--auth", filepath.Join(h.dir, "tokens.json"), "--notify", sinks)
	agent := withToken(p.url, agentToken)
	second := governedTask(t, agent, "notify-2")
	propose(t, agent, second, "wire-2", "wire", map[string]any{"amount": 7})
	approvers.waitTaken(t, "approvers", "approval.requested", second)
	flaky.failing.Store(false)
	for _, task := range []string{first, second} {
		d := flaky.waitTaken(t, "flaky", "approval.requested", task)
		checkSignature(t, python, d, flakySecret, true)
	}
	sameIDs(t, approvers.all(), flaky.all())

	// acme's own approval reaches acme's sink; nothing of the default
	// tenant's ever did.
	acmeAgent := withToken(p.url, acmeAgentToken)
	acmeTask := governedTask(t, acmeAgent, "notify-acme")
	propose(t, acmeAgent, acmeTask, "wire-acme", "wire", map[string]any{"amount": 9})
	acme.waitTaken(t, "acme", "approval.requested", acmeTask)
	for _, d := range acme.all() {
		if d.note.Tenant != "acme" {
			t.Errorf("acme's sink received %s of task %s, tenant %q", d.note.Kind, d.note.TaskID, d.note.Tenant)
		}
	}
}

// checkApprovalNotification checks that an approval's notification carries
// what a person needs to decide.
func checkApprovalNotification(t *testing.T, d delivery) {
	t.Helper()
	var ap struct {
		ApprovalID     string   `json:"approvalId"`
		ActionHash     string   `json:"actionHash"`
		Tool           string   `json:"tool"`
		Target         string   `json:"target"`
		ParametersJSON string   `json:"parametersJson"`
		EffectClass    string   `json:"effectClass"`
		PolicyReasons  []string `json:"policyReasons"`
		Rationale      struct {
			ExpectedImpact string `json:"expectedImpact"`
			RollbackPlan   string `json:"rollbackPlan"`
		} `json:"rationale"`
	}
	if err := json.Unmarshal(d.note.Approval, &ap); err != nil {
		t.Fatalf("approval: %v: %s", err, d.note.Approval)
	}
	if ap.ActionHash == "" || ap.Tool != "wire" || ap.Target != "acct:42" || !strings.Contains(ap.ParametersJSON, `"amount":5`) ||
		ap.EffectClass != "EFFECT_CLASS_IRREVERSIBLE" || len(ap.PolicyReasons) == 0 || ap.Rationale.RollbackPlan != argued.RollbackPlan {
		t.Errorf("the approval's notification lacks what a person needs: %s", d.note.Approval)
	}
	if d.header.Get(notify.HeaderID) != d.note.ID || d.note.ID == "" || !strings.Contains(d.note.Act, ap.ApprovalID) {
		t.Errorf("id %q (header %q), act %q", d.note.ID, d.header.Get(notify.HeaderID), d.note.Act)
	}
}

// sameIDs checks that every copy of one notification, in any sink,
// answered or not, carries one id.
func sameIDs(t *testing.T, sinks ...[]delivery) {
	t.Helper()
	ids := map[string]string{}
	for _, got := range sinks {
		for _, d := range got {
			key := d.note.Kind + " " + d.note.TaskID + " " + fmt.Sprint(d.note.Sequence)
			if id, ok := ids[key]; ok && id != d.note.ID {
				t.Errorf("%s came as %s and as %s", key, id, d.note.ID)
			}
			ids[key] = d.note.ID
		}
	}
}

// pythonBlock is the docs' verification snippet.
var pythonBlock = regexp.MustCompile("(?s)## Verify.*?```python\n(.*?)```")

// checkSignature runs docs/notifications.md's snippet, as written, over
// what a sink received, and wants it to accept (or refuse) it.
func checkSignature(t *testing.T, python string, d delivery, secret string, accept bool) {
	t.Helper()
	doc, err := os.ReadFile("../docs/notifications.md")
	if err != nil {
		t.Fatal(err)
	}
	m := pythonBlock.FindSubmatch(doc)
	if m == nil {
		t.Fatal("docs/notifications.md has no python block under ## Verify")
	}
	script := writeFile(t, t.TempDir(), "verify.py", string(m[1]))
	cmd := exec.Command(python, script)
	cmd.Stdin = bytes.NewReader(d.body)
	cmd.Env = append(os.Environ(), "WEBHOOK_SECRET="+secret, "WEBHOOK_ID="+d.header.Get(notify.HeaderID),
		"WEBHOOK_TIMESTAMP="+d.header.Get(notify.HeaderTimestamp), "WEBHOOK_SIGNATURE="+d.header.Get(notify.HeaderSignature))
	out, err := cmd.CombinedOutput()
	if accepted := err == nil; accepted != accept {
		t.Errorf("the docs' snippet accepted %v, want %v (%v): %s", accepted, accept, err, out)
	}
}
