package a2a_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/steward-run/steward/pkg/a2a"
)

func writeSkills(t testing.TB, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "skills.json")
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestLoadSkillsRefuses checks that a skills file is refused, naming what
// is wrong, for each mistake an operator can make in it.
func TestLoadSkillsRefuses(t *testing.T) {
	for _, tc := range []struct{ name, file, says string }{
		{"not JSON", `{`, "unexpected EOF"},
		{"an unknown field", `{"skills":[{"id":"a","name":"A","agent":"agent:x","owner":"me"}]}`, `unknown field "owner"`},
		{"no skills", `{"skills":[]}`, "no skills"},
		{"a bad id", `{"skills":[{"id":"Not An Id","name":"A","agent":"agent:x"}]}`, "skills[0].id"},
		{"an id twice", `{"skills":[{"id":"a","name":"A","agent":"agent:x"},{"id":"a","name":"B","agent":"agent:x"}]}`, "skills[1].id"},
		{"no name", `{"skills":[{"id":"a","agent":"agent:x"}]}`, "skills[0].name"},
		{"no agent", `{"skills":[{"id":"a","name":"A"}]}`, "skills[0].agent"},
		{"an unknown contract field", `{"skills":[{"id":"a","name":"A","agent":"agent:x","contract":{"owner":"me"}}]}`, "skills[0].contract"},
		{"a task id", `{"skills":[{"id":"a","name":"A","agent":"agent:x","contract":{"taskId":"t"}}]}`, "what Steward assigns"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := a2a.LoadSkills(writeSkills(t, tc.file))
			if err == nil || !strings.Contains(err.Error(), tc.says) {
				t.Fatalf("%v, want an error saying %q", err, tc.says)
			}
		})
	}
}

// The agent card names each skill, the JSON-RPC endpoint, the protocol
// version and the bearer scheme every call needs.
func ExampleHandler_Card() {
	dir, _ := os.MkdirTemp("", "skills")
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "skills.json")
	_ = os.WriteFile(path, []byte(`{"skills": [{"id": "summarise", "name": "Summarise", "agent": "agent:summariser",
	  "contract": {"desiredOutcome": "A summary", "riskTier": "RISK_TIER_LOW", "budget": {"maxTokens": "50000"}}}]}`), 0o600)
	skills, err := a2a.LoadSkills(path)
	if err != nil {
		panic(err)
	}
	h, err := a2a.New(a2a.Config{Name: "Steward", Skills: skills})
	if err != nil {
		panic(err)
	}
	card := h.Card("https://steward.example")
	security, _ := json.Marshal(card.SecuritySchemes)
	fmt.Println(card.ProtocolVersion, card.URL, card.PreferredTransport, card.Skills[0].ID)
	fmt.Println(string(security))
	// Output:
	// 0.3.0 https://steward.example/a2a JSONRPC summarise
	// {"bearer":{"type":"http","description":"a Steward bearer token (a token file's or a JWT): the same as the Connect API's","scheme":"Bearer"}}
}
