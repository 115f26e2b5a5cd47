package e2e_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
)

// toolServer is a real HTTP tool that counts executions per
// Idempotency-Key and, like a well-behaved tool, does the work once per key.
type toolServer struct {
	*httptest.Server
	mu    sync.Mutex
	calls map[string]int // every request, by key
	done  map[string][]byte
}

func startToolServer(t *testing.T) *toolServer {
	ts := &toolServer{calls: map[string]int{}, done: map[string][]byte{}}
	ts.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key := r.Header.Get("Idempotency-Key")
		body, _ := io.ReadAll(r.Body)
		ts.mu.Lock()
		defer ts.mu.Unlock()
		ts.calls[key]++
		if key == "" {
			http.Error(w, `{"message":"Idempotency-Key is required"}`, http.StatusBadRequest)
			return
		}
		if _, ok := ts.done[key]; !ok {
			var req struct {
				Params map[string]any `json:"params"`
			}
			_ = json.Unmarshal(body, &req)
			ts.done[key], _ = json.Marshal(map[string]any{"ok": true, "echo": req.Params, "task": r.Header.Get("Steward-Task-Id")})
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(ts.done[key])
	}))
	t.Cleanup(ts.Close)
	return ts
}

// executions returns how many distinct keys the tool did work for, and
// how many requests it got in all.
func (ts *toolServer) executions() (keys, requests int) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	for _, n := range ts.calls {
		requests += n
	}
	return len(ts.done), requests
}

func (ts *toolServer) callsFor(key string) int {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return ts.calls[key]
}
