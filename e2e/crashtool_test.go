package e2e_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
)

// slowAnswer is how long the slow tool holds its answer: past the 1s
// timeout its contract gives the caller, so the caller sees no answer.
const slowAnswer = 2500 * time.Millisecond

// crashTool is a real HTTP tool for the crash matrix. Like a well-behaved
// tool it works once per Idempotency-Key and answers a repeat with the
// first result; it keeps what a crash test needs to judge the runtime: the
// requests per key, the keys in the order they were worked, and the status
// queries per key, which it answers from its own records.
//
//	POST /work    answers at once
//	POST /slow    works at once, then holds its answer for slowAnswer
//	POST /flaky   answers a key's first request 503, without working
//	POST /undo    the compensating tool
//	GET  /status  the status query for all of them
type crashTool struct {
	*httptest.Server
	stop chan struct{} // closed at cleanup: slow answers stop waiting

	mu      sync.Mutex
	posts   map[string]int    // requests per key (after a /flaky refusal)
	refused map[string]bool   // keys /flaky refused once
	asks    map[string]int    // status queries per key
	results map[string][]byte // the result of each key worked
	worked  []toolExecution   // effective executions, in order
}

// toolExecution is one key worked: the first request that carried it.
type toolExecution struct {
	Key, Path, ActionID, Target string
	// Undoes is, for /undo, the action the compensation undoes.
	Undoes string
}

func startCrashTool(t *testing.T) *crashTool {
	t.Helper()
	ct := &crashTool{stop: make(chan struct{}), posts: map[string]int{}, asks: map[string]int{}, results: map[string][]byte{}, refused: map[string]bool{}}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /work", ct.call)
	mux.HandleFunc("POST /slow", ct.call)
	mux.HandleFunc("POST /flaky", ct.call)
	mux.HandleFunc("POST /undo", ct.call)
	mux.HandleFunc("GET /status", ct.status)
	ct.Server = httptest.NewServer(mux)
	t.Cleanup(func() {
		close(ct.stop)
		ct.Close()
	})
	return ct
}

// call does the work for a key the first time it sees it and answers
// every request for the key with that first result.
func (ct *crashTool) call(w http.ResponseWriter, r *http.Request) {
	key := r.Header.Get("Idempotency-Key")
	if key == "" {
		http.Error(w, `{"message":"Idempotency-Key is required"}`, http.StatusBadRequest)
		return
	}
	body, _ := io.ReadAll(r.Body)
	ct.mu.Lock()
	if r.URL.Path == "/flaky" && !ct.refused[key] {
		// The first request for a key fails before any work: a transient
		// failure, retried with the same key.
		ct.refused[key] = true
		ct.mu.Unlock()
		http.Error(w, `{"message":"try again"}`, http.StatusServiceUnavailable)
		return
	}
	ct.posts[key]++
	result, ok := ct.results[key]
	if !ok {
		result = ct.work(r, key, body)
	}
	ct.mu.Unlock()
	if r.URL.Path == "/slow" {
		select {
		case <-time.After(slowAnswer):
		case <-ct.stop:
		case <-r.Context().Done():
		}
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(result)
}

// work records one effective execution and returns its result. The
// caller holds ct.mu.
func (ct *crashTool) work(r *http.Request, key string, body []byte) []byte {
	var req struct {
		Target string `json:"target"`
		Params struct {
			Item     string `json:"item"`
			ActionID string `json:"action_id"` // in a compensation: the action undone
		} `json:"params"`
	}
	_ = json.Unmarshal(body, &req)
	ex := toolExecution{Key: key, Path: r.URL.Path, ActionID: r.Header.Get("Steward-Action-Id"), Target: req.Target}
	if r.URL.Path == "/undo" {
		ex.Undoes = req.Params.ActionID
	}
	ct.worked = append(ct.worked, ex)
	result, _ := json.Marshal(map[string]any{"ok": true, "execution": len(ct.worked), "item": req.Params.Item, "undoes": ex.Undoes})
	ct.results[key] = result
	return result
}

// status answers the status query from the tool's records: succeeded with
// the stored result, or not_accepted for a key it never worked.
func (ct *crashTool) status(w http.ResponseWriter, r *http.Request) {
	key := r.URL.Query().Get("op_key")
	ct.mu.Lock()
	ct.asks[key]++
	result, ok := ct.results[key]
	ct.mu.Unlock()
	answer := map[string]any{"state": "not_accepted"}
	if ok {
		answer = map[string]any{"state": "succeeded", "result": json.RawMessage(result)}
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(answer)
}

// executions returns the effective executions in the order they happened.
func (ct *crashTool) executions() []toolExecution {
	ct.mu.Lock()
	defer ct.mu.Unlock()
	return append([]toolExecution(nil), ct.worked...)
}

// postsFor is how many requests carried key.
func (ct *crashTool) postsFor(key string) int {
	ct.mu.Lock()
	defer ct.mu.Unlock()
	return ct.posts[key]
}

// asksFor is how many status queries asked about key.
func (ct *crashTool) asksFor(key string) int {
	ct.mu.Lock()
	defer ct.mu.Unlock()
	return ct.asks[key]
}

// crashToolsFile is the tools file that points Steward at ct:
//   - put: an idempotent write with a status query;
//   - slowput: the same on /slow, with a 1s timeout that the tool outlasts;
//   - flakyput: the same on /flaky, which refuses a key's first request
//     with a 503 (posts counts only the requests after it);
//   - reserve: a reversible write that release undoes.
func crashToolsFile(ct *crashTool) string {
	const item = `{\"type\":\"object\",\"required\":[\"item\"],\"properties\":{\"item\":{\"type\":\"string\",\"minLength\":1}}}`
	const undo = `{\"type\":\"object\",\"required\":[\"action_id\",\"op_key\"],\"properties\":{\"action_id\":{\"type\":\"string\"},\"op_key\":{\"type\":\"string\"}}}`
	tool := func(name, class, schema, timeout, path, extra string) string {
		return fmt.Sprintf(`{"name": %q, "version": "1.0.0", "effectClass": %q, "dataSensitivity": "DATA_SENSITIVITY_INTERNAL", "parametersSchema": "%s",
		  "idempotency": {"honoursKey": true, "keyScope": "per-tool", "onRepeat": "the first result"},
		  "statusQuery": true, "timeout": %q, %s
		  "http": {"url": %q, "statusUrl": %q}}`, name, class, schema, timeout, extra, ct.URL+path, ct.URL+"/status")
	}
	return `{"tools": [` +
		tool("put", "EFFECT_CLASS_IDEMPOTENT_WRITE", item, "5s", "/work", "") + ",\n" +
		tool("slowput", "EFFECT_CLASS_IDEMPOTENT_WRITE", item, "1s", "/slow", "") + ",\n" +
		tool("flakyput", "EFFECT_CLASS_IDEMPOTENT_WRITE", item, "5s", "/flaky", `"retryPolicy": {"maxAttempts": 3, "initialBackoff": "0.1s", "maxBackoff": "0.2s"},`) + ",\n" +
		tool("reserve", "EFFECT_CLASS_REVERSIBLE_WRITE", item, "5s", "/work", `"compensatingTool": "release",`) + ",\n" +
		tool("release", "EFFECT_CLASS_IDEMPOTENT_WRITE", undo, "5s", "/undo", "") +
		`]}`
}
