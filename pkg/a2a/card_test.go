package a2a

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

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
