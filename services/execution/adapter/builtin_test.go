package adapter_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/services/execution/adapter"
)

func builtinTool(kind string) *stewardv1.ToolContract {
	return &stewardv1.ToolContract{
		Name:     kind,
		Version:  "1",
		Endpoint: &stewardv1.ToolContract_Builtin{Builtin: &stewardv1.BuiltinEndpoint{Kind: kind}},
	}
}

// builtinRequest builds a canonical request around params.
func builtinRequest(t *testing.T, kind, opKey string, params any) adapter.Request {
	t.Helper()
	body, err := json.Marshal(map[string]any{
		"params": params, "target": "sandbox", "task_id": "task-1", "tool": kind, "tool_version": "1",
	})
	if err != nil {
		t.Fatal(err)
	}
	return adapter.Request{TaskID: "task-1", ActionID: "act-1", OpKey: opKey, Tool: builtinTool(kind), Body: body}
}

func newBuiltin(t *testing.T, cfg adapter.BuiltinConfig) adapter.Adapter {
	t.Helper()
	a, err := adapter.NewBuiltin(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func mustSucceed(t *testing.T, r adapter.Result) []byte {
	t.Helper()
	if r.Status != succeededStatus {
		t.Fatalf("got %v/%v (%s), want SUCCEEDED", r.Status, r.FailureClass, r.Reason)
	}
	return r.Body
}

func mustStatus(t *testing.T, a adapter.Adapter, req adapter.Request, want adapter.StatusAnswer) {
	t.Helper()
	got, err := a.Status(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if got.State != want.State || string(got.Result) != string(want.Result) {
		t.Errorf("status = {%s %s}, want {%s %s}", got.State, got.Result, want.State, want.Result)
	}
}

func TestNewBuiltinNeedsASandbox(t *testing.T) {
	if _, err := adapter.NewBuiltin(adapter.BuiltinConfig{}); err == nil {
		t.Fatal("NewBuiltin without a sandbox dir succeeded")
	}
	dir := filepath.Join(t.TempDir(), "not", "yet")
	newBuiltin(t, adapter.BuiltinConfig{SandboxDir: dir})
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		t.Fatalf("sandbox dir not created: %v", err)
	}
}

func TestNoop(t *testing.T) {
	a := newBuiltin(t, adapter.BuiltinConfig{SandboxDir: t.TempDir()})
	req := builtinRequest(t, adapter.KindNoop, "op-1", map[string]any{})

	body := mustSucceed(t, a.Call(context.Background(), req))

	if string(body) != `{"ok":true}` {
		t.Errorf("body = %s", body)
	}
	mustStatus(t, a, req, adapter.StatusAnswer{State: adapter.StateSucceeded, Result: []byte(`{"ok":true}`)})
	// A no-op keeps no record: any key "succeeded", since nothing can
	// have half-happened.
	other := builtinRequest(t, adapter.KindNoop, "op-2", map[string]any{})
	mustStatus(t, a, other, adapter.StatusAnswer{State: adapter.StateSucceeded, Result: []byte(`{"ok":true}`)})
}

func TestFileWrite(t *testing.T) {
	dir := t.TempDir()
	a := newBuiltin(t, adapter.BuiltinConfig{SandboxDir: dir})
	const content = "hello, sandbox\n"
	req := builtinRequest(t, adapter.KindFileWrite, "op-1", map[string]any{"path": "notes/./a.txt", "content": content})

	body := mustSucceed(t, a.Call(context.Background(), req))

	sum := sha256.Sum256([]byte(content))
	want := fmt.Sprintf(`{"path":"notes/a.txt","bytes":%d,"sha256":"%s"}`, len(content), hex.EncodeToString(sum[:]))
	if string(body) != want {
		t.Errorf("result = %s, want %s", body, want)
	}
	got, err := os.ReadFile(filepath.Join(dir, "notes", "a.txt"))
	if err != nil || string(got) != content {
		t.Fatalf("file = %q, %v; want %q", got, err, content)
	}
	mustStatus(t, a, req, adapter.StatusAnswer{State: adapter.StateSucceeded, Result: body})
}

func TestFileWriteRefusesPathsOutsideTheSandbox(t *testing.T) {
	outside := t.TempDir()
	dir := t.TempDir()
	for _, d := range []string{"sub", "real"} {
		if err := os.Mkdir(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(outside, filepath.Join(dir, "out")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "victim"), filepath.Join(dir, "victim")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("real", filepath.Join(dir, "inside")); err != nil {
		t.Fatal(err)
	}
	a := newBuiltin(t, adapter.BuiltinConfig{SandboxDir: dir})

	tests := []struct{ name, path, reason string }{
		{"parent", "../escape.txt", "escapes"},
		{"parent after a dir", "sub/../../escape.txt", "escapes"},
		{"absolute", filepath.Join(outside, "abs.txt"), "absolute"},
		{"empty", "", "empty"},
		{"op records", ".steward-ops/forged.json", "reserved"},
		{"symlinked dir to outside", "out/escape.txt", "symlink"},
		{"symlinked file to outside", "victim", "symlink"},
		{"symlink that stays inside", "inside/x.txt", "symlink"},
		{"a directory", "sub", "not a regular file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := builtinRequest(t, adapter.KindFileWrite, "op-"+tt.name, map[string]any{"path": tt.path, "content": "x"})
			got := a.Call(context.Background(), req)
			if got.Status != failedStatus || got.FailureClass != determClass {
				t.Fatalf("got %v/%v (%s), want FAILED/DETERMINISTIC", got.Status, got.FailureClass, got.Reason)
			}
			if !strings.Contains(got.Reason, tt.reason) {
				t.Errorf("reason = %q, want it to contain %q", got.Reason, tt.reason)
			}
			// A refused write changed nothing, so the key was not accepted.
			mustStatus(t, a, req, adapter.StatusAnswer{State: adapter.StateNotAccepted})
		})
	}
	for _, d := range []string{outside, filepath.Dir(dir), filepath.Join(dir, "real")} {
		entries, err := os.ReadDir(d)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if strings.Contains(e.Name(), "escape") || e.Name() == "victim" || e.Name() == "abs.txt" || e.Name() == "x.txt" {
				t.Errorf("written despite the refusal: %s", filepath.Join(d, e.Name()))
			}
		}
	}
	if _, err := os.Stat(filepath.Join(dir, ".steward-ops", "forged.json")); err == nil {
		t.Error("a request forged an op record")
	}
}

// A repeat after a restart — a new adapter over the same dir — returns the
// first result and does not write again.
func TestFileWriteSameOpKeyWritesOnce(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "report.txt")
	req := builtinRequest(t, adapter.KindFileWrite, "op-1", map[string]any{"path": "report.txt", "content": "first"})
	first := mustSucceed(t, newBuiltin(t, adapter.BuiltinConfig{SandboxDir: dir}).Call(context.Background(), req))
	if err := os.WriteFile(file, []byte("changed since"), 0o644); err != nil {
		t.Fatal(err)
	}

	restarted := newBuiltin(t, adapter.BuiltinConfig{SandboxDir: dir})
	again := mustSucceed(t, restarted.Call(context.Background(), req))

	if string(again) != string(first) {
		t.Errorf("repeat got %s, first got %s", again, first)
	}
	if got, _ := os.ReadFile(file); string(got) != "changed since" {
		t.Errorf("file = %q: the repeat wrote again", got)
	}
	mustStatus(t, restarted, req, adapter.StatusAnswer{State: adapter.StateSucceeded, Result: first})

	// A new key is new work.
	other := builtinRequest(t, adapter.KindFileWrite, "op-2", map[string]any{"path": "report.txt", "content": "first"})
	mustSucceed(t, restarted.Call(context.Background(), other))
	if got, _ := os.ReadFile(file); string(got) != "first" {
		t.Errorf("file = %q after a call with a new key, want %q", got, "first")
	}
}

// Concurrent calls with one op_key do the work once: each carries different
// content, so a second execution would show in the results.
func TestFileWriteConcurrentSameOpKey(t *testing.T) {
	dir := t.TempDir()
	a := newBuiltin(t, adapter.BuiltinConfig{SandboxDir: dir})
	const n = 16
	results := make([]adapter.Result, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			req := builtinRequest(t, adapter.KindFileWrite, "op-shared", map[string]any{"path": "race.txt", "content": fmt.Sprint("writer ", i)})
			results[i] = a.Call(context.Background(), req)
		})
	}
	wg.Wait()

	for i, r := range results {
		if body := mustSucceed(t, r); string(body) != string(results[0].Body) {
			t.Errorf("result %d = %s, result 0 = %s", i, body, results[0].Body)
		}
	}
	var res struct{ SHA256 string }
	if err := json.Unmarshal(results[0].Body, &res); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(filepath.Join(dir, "race.txt"))
	if sum := sha256.Sum256(got); hex.EncodeToString(sum[:]) != res.SHA256 {
		t.Errorf("file %q is not what the one result describes", got)
	}
}

func TestBuiltinRejectsMalformedRequests(t *testing.T) {
	a := newBuiltin(t, adapter.BuiltinConfig{SandboxDir: t.TempDir()})
	withBody := func(kind, body string) adapter.Request {
		return adapter.Request{OpKey: "op-1", Tool: builtinTool(kind), Body: []byte(body)}
	}
	tests := []struct {
		name   string
		req    adapter.Request
		reason string
	}{
		{"body not JSON", withBody(adapter.KindFileWrite, `{"params":`), "not JSON"},
		{"no params", withBody(adapter.KindFileWrite, `{"tool":"file.write"}`), "no params"},
		{"params not an object", withBody(adapter.KindFileWrite, `{"params":[1]}`), "params"},
		{"no path", builtinRequest(t, adapter.KindFileWrite, "op-1", map[string]any{"content": "x"}), "path"},
		{"no content", builtinRequest(t, adapter.KindFileWrite, "op-1", map[string]any{"path": "a"}), "content"},
		{"content not a string", builtinRequest(t, adapter.KindFileWrite, "op-1", map[string]any{"path": "a", "content": 7}), "params"},
		{"no op_key", builtinRequest(t, adapter.KindNoop, "", map[string]any{}), "op_key"},
		{"unknown kind", builtinRequest(t, "shell.exec", "op-1", map[string]any{}), `"shell.exec"`},
		{"kv.append without a bucket", builtinRequest(t, adapter.KindKVAppend, "op-1", map[string]any{"key": "k", "record": 1}), "no KV bucket"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := a.Call(context.Background(), tt.req)
			if got.Status != failedStatus || got.FailureClass != determClass {
				t.Fatalf("got %v/%v (%s), want FAILED/DETERMINISTIC", got.Status, got.FailureClass, got.Reason)
			}
			if !strings.Contains(got.Reason, tt.reason) {
				t.Errorf("reason = %q, want it to contain %q", got.Reason, tt.reason)
			}
		})
	}
}
