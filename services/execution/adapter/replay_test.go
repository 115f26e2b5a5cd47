package adapter_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/services/execution/adapter"
)

// TestTheTransportNeverResendsACall: Go's transport resends a request with
// an Idempotency-Key on a fresh connection when a reused one fails, which
// did an irreversible tool's work twice behind Steward's back. Found by an
// independent review.
func TestTheTransportNeverResendsACall(t *testing.T) {
	var mu sync.Mutex
	calls := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		calls++
		n := calls
		mu.Unlock()
		if n == 2 {
			// Does the work, then the connection dies before the answer.
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				conn.Close()
			}
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"ok": true}`))
	}))
	t.Cleanup(srv.Close)
	a := adapter.NewHTTP(srv.Client())
	tool := &stewardv1.ToolContract{Name: "wire", EffectClass: stewardv1.EffectClass_EFFECT_CLASS_IRREVERSIBLE,
		Endpoint: &stewardv1.ToolContract_Http{Http: &stewardv1.HTTPEndpoint{Url: srv.URL}}}
	call := func(key string) adapter.Result {
		return a.Call(context.Background(), adapter.Request{TaskID: "t", ActionID: "a", OpKey: key, Tool: tool, Body: []byte(`{}`)})
	}
	if r := call("warm"); r.Status != stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED {
		t.Fatalf("warm-up: %v %s", r.Status, r.Reason) // leaves a keep-alive connection
	}
	r := call("k")
	mu.Lock()
	defer mu.Unlock()
	if calls != 2 || r.Status != stewardv1.ActionStatus_ACTION_STATUS_UNKNOWN || !r.Arrived {
		t.Fatalf("%d requests reached the tool, result %v (arrived %v): want 2 in all and the second unknown", calls, r.Status, r.Arrived)
	}
}
