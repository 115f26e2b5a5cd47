package a2a

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/a2a"
)

// The card names the endpoint at the public URL when one is set, whatever
// Host a caller sends; without one it follows the request.
func TestCardNamesThePublicURLOverTheHostHeader(t *testing.T) {
	for _, tc := range []struct{ public, want string }{
		{"https://steward.example.com", "https://steward.example.com/a2a"},
		{"", "http://attacker.example/a2a"},
	} {
		h, err := New(Config{Skills: []Skill{{ID: "s", Name: "s"}}, PublicURL: tc.public})
		if err != nil {
			t.Fatal(err)
		}
		r := httptest.NewRequest(http.MethodGet, CardPath, nil)
		r.Host = "attacker.example"
		w := httptest.NewRecorder()
		h.serveCard(w, r)
		var card a2a.AgentCard
		if err := json.Unmarshal(w.Body.Bytes(), &card); err != nil {
			t.Fatal(err)
		}
		if card.URL != tc.want {
			t.Errorf("public %q: card url = %q, want %q", tc.public, card.URL, tc.want)
		}
	}
}

func TestParsePublicURL(t *testing.T) {
	for raw, want := range map[string]string{
		"https://steward.example.com/":        "https://steward.example.com",
		"http://10.0.0.1:8080/steward":        "http://10.0.0.1:8080/steward",
		"https://steward.example.com/a/b/c//": "https://steward.example.com/a/b/c",
	} {
		got, err := ParsePublicURL(raw)
		if err != nil || got != want {
			t.Errorf("ParsePublicURL(%q) = %q, %v; want %q", raw, got, err, want)
		}
	}
	for _, raw := range []string{"steward.example.com", "ftp://x", "https://", "https://x/?a=1", "https://x/#f", "https://u:p@x", "::"} {
		if got, err := ParsePublicURL(raw); err == nil {
			t.Errorf("ParsePublicURL(%q) = %q, want an error", raw, got)
		}
	}
}

// A stream with nothing to say writes SSE comments, which clients ignore,
// until it is stopped; and none after.
func TestStreamKeepAlive(t *testing.T) {
	w := &lockedRecorder{rec: httptest.NewRecorder()}
	out := startSSE(w, json.RawMessage(`1`))
	stop := out.keepAlive(time.Millisecond)
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(w.body(), ": keepalive\n\n: keepalive\n\n") {
		if time.Now().After(deadline) {
			t.Fatalf("no keepalive in 10 s: %q", w.body())
		}
		runtime.Gosched()
	}
	if err := out.send("hello", nil); err != nil {
		t.Fatal(err)
	}
	stop()
	after := w.body()
	if !strings.Contains(after, `"result":"hello"`) {
		t.Fatalf("the event is missing from %q", after)
	}
	if err := out.send("bye", nil); err != nil || strings.Contains(strings.TrimPrefix(w.body(), after), "keepalive") {
		t.Errorf("a keepalive after stop, or send failed (%v): %q", err, w.body())
	}
}

// lockedRecorder lets the test read what the stream wrote while it writes.
type lockedRecorder struct {
	mu  sync.Mutex
	rec *httptest.ResponseRecorder
}

func (l *lockedRecorder) Header() http.Header { return l.rec.Header() }
func (l *lockedRecorder) WriteHeader(code int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.rec.WriteHeader(code)
}
func (l *lockedRecorder) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.rec.Write(p)
}
func (l *lockedRecorder) Flush() {}
func (l *lockedRecorder) body() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.rec.Body.String()
}
