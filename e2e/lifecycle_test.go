package e2e_test

import (
	"bytes"
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

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// readmeCreate is docs/tour.md's first curl example (once the README's), byte for byte in spirit: a
// Connect JSON POST with nothing but an HTTP client.
const readmeCreate = `{"requestId": "demo-1", "contract": {
  "intent": "Summarise last week's incidents",
  "desiredOutcome": "A one-page summary for the on-call review",
  "requesterRef": "user:ana", "accountableOwnerRef": "user:ana",
  "riskTier": "RISK_TIER_LOW", "budget": {"maxTokens": "50000"}}}`

func postJSON(t *testing.T, url, body string) (int, map[string]any) {
	t.Helper()
	return postAs(t, "", url, body)
}

// postAs posts a Connect JSON request with a bearer token (none for ""),
// as curl would.
func postAs(t *testing.T, token, url, body string) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatalf("decode response: %v", err)
	}
	return resp.StatusCode, out
}

// TestSurvivesKillNine walks the README: create with curl-style JSON, read,
// watch, SIGKILL, restart, read again, verify online and offline.
func TestSurvivesKillNine(t *testing.T) {
	data := t.TempDir()
	p := startBinary(t, data)

	code, body := postJSON(t, p.url+"/steward.v1.TaskService/CreateTask", readmeCreate)
	if code != http.StatusOK {
		t.Fatalf("CreateTask: HTTP %d %v", code, body)
	}
	taskID := body["task"].(map[string]any)["contract"].(map[string]any)["taskId"].(string)

	c := newClients(p.url)
	waitStarted(t, c, taskID)

	// WatchTask streams the events so far: created, then started.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	stream, err := c.query.WatchTask(ctx, connect.NewRequest(&stewardv1.WatchTaskRequest{TaskId: taskID}))
	if err != nil {
		t.Fatal(err)
	}
	var types []string
	if !stream.Receive() || stream.Msg().Record != nil || stream.Msg().LastSequence == 0 {
		t.Fatalf("the first watch response should say where the task stands, with no event: %v %v", stream.Msg(), stream.Err())
	}
	for len(types) < 2 && stream.Receive() {
		// Governance issues the credential alongside the start, in either
		// order.
		if typ := stream.Msg().Record.Event.Type; typ != "credential.issued" {
			types = append(types, typ)
		}
	}
	if strings.Join(types, ",") != "task.created,task.started" {
		t.Fatalf("watched %v (err %v)", types, stream.Err())
	}
	stream.Close()

	if _, err := c.tasks.PauseTask(ctx, connect.NewRequest(&stewardv1.PauseTaskRequest{TaskId: taskID, Reason: "waiting for data"})); err != nil {
		t.Fatal(err)
	}

	p.kill() // SIGKILL: nothing acknowledged may be lost.
	p = startBinary(t, data)
	c = newClients(p.url)

	got := waitStatus(t, c, taskID, stewardv1.TaskStatus_TASK_STATUS_PAUSED)
	if got.EventCount != 4 || got.StatusReason != "waiting for data" {
		t.Fatalf("after restart: %v", got)
	}
	v, err := c.audit.VerifyTask(ctx, connect.NewRequest(&stewardv1.VerifyTaskRequest{TaskId: taskID}))
	if err != nil {
		t.Fatal(err)
	}
	if !v.Msg.Ok || v.Msg.EventCount != 4 {
		t.Fatalf("VerifyTask = %v", v.Msg)
	}
	// The task goes on after the restart.
	if _, err := c.tasks.ResumeTask(ctx, connect.NewRequest(&stewardv1.ResumeTaskRequest{TaskId: taskID})); err != nil {
		t.Fatal(err)
	}

	// Offline: export, verify, flip one byte of one event, verify again.
	file := filepath.Join(t.TempDir(), "task.events")
	addr := strings.TrimPrefix(p.url, "http://")
	if out := run(t, 0, "audit", "verify", "--task", taskID, "--addr", addr); !strings.Contains(out, "ok: 5 events verified") {
		t.Fatalf("online verify: %s", out)
	}
	run(t, 0, "audit", "export", "--task", taskID, "--addr", addr, "--out", file)
	p.stop(t)
	out := run(t, 0, "audit", "verify", "--file", file)
	if !strings.Contains(out, "ok: 5 events verified") {
		t.Fatalf("verify: %s", out)
	}
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	// Flip a byte inside the third event's body: past the first two events
	// and the third's length prefix.
	third := eventOffset(t, raw, 2)
	raw[third+10] ^= 0x20
	if err := os.WriteFile(file, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	out = run(t, 3, "audit", "verify", "--file", file)
	if !strings.Contains(out, "FAIL: event 2") {
		t.Fatalf("verify of a tampered file should name event 2: %s", out)
	}
}

// eventOffset returns where event i's bytes start in an export file.
func eventOffset(t *testing.T, raw []byte, i int) int {
	t.Helper()
	off := 0
	for n := 0; ; n++ {
		length, w := uvarint(raw[off:])
		if w <= 0 {
			t.Fatal("bad export file")
		}
		if n == i {
			return off + w
		}
		off += w + int(length)
	}
}

func uvarint(b []byte) (uint64, int) {
	var x uint64
	for i, c := range b {
		if i == 10 {
			return 0, -1
		}
		x |= uint64(c&0x7f) << (7 * i)
		if c < 0x80 {
			return x, i + 1
		}
	}
	return 0, 0
}

// run runs the steward binary and checks its exit code.
func run(t *testing.T, wantCode int, args ...string) string {
	t.Helper()
	cmd := exec.Command(binary, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if code := exitCode(t, cmd); code != wantCode {
		t.Fatalf("steward %v exited %d, want %d:\n%s", args, code, wantCode, out.String())
	}
	return out.String()
}
