package action_test

import (
	"strings"
	"testing"

	"github.com/steward-run/steward/pkg/action"
)

func TestConceal(t *testing.T) {
	commit := func(v []byte) string { return "c(" + string(v) + ")" }
	for _, tc := range []struct {
		name, schema, params, want string
	}{
		{"none", `{"type":"object","properties":{"a":{"type":"string"}}}`, `{"a":"x"}`, `{"a":"x"}`},
		{"writeOnly", `{"properties":{"pw":{"type":"string","writeOnly":true},"u":{"type":"string"}}}`,
			`{"pw":"hunter2","u":"bob"}`, `{"pw":{"$secret":"c(\"hunter2\")"},"u":"bob"}`},
		{"keyword", `{"properties":{"k":{"x-steward-secret":true}}}`, `{"k":{"b":1,"a":2}}`, `{"k":{"$secret":"c({\"a\":2,\"b\":1})"}}`},
		{"ref and items", `{"$defs":{"s":{"type":"string","writeOnly":true}},"properties":{"l":{"items":{"$ref":"#/$defs/s"}}}}`,
			`{"l":["a","b"]}`, `{"l":[{"$secret":"c(\"a\")"},{"$secret":"c(\"b\")"}]}`},
		{"nested", `{"properties":{"auth":{"properties":{"token":{"writeOnly":true}}}}}`,
			`{"auth":{"token":"t","user":"u"},"token":"not secret here"}`, `{"auth":{"token":{"$secret":"c(\"t\")"},"user":"u"},"token":"not secret here"}`},
		{"additional for the other keys", `{"properties":{"name":{}},"additionalProperties":{"writeOnly":true}}`,
			`{"name":"n","other":"o"}`, `{"name":"n","other":{"$secret":"c(\"o\")"}}`},
		{"pattern", `{"patternProperties":{"^sec_":{"writeOnly":true}}}`,
			`{"sec_a":"1","plain":"2"}`, `{"plain":"2","sec_a":{"$secret":"c(\"1\")"}}`},
		{"anyOf branch", `{"properties":{"p":{"anyOf":[{"type":"number"},{"type":"string","writeOnly":true}]}}}`,
			`{"p":"s"}`, `{"p":{"$secret":"c(\"s\")"}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := action.CompileSchema(tc.schema)
			if err != nil {
				t.Fatal(err)
			}
			got, err := s.Conceal([]byte(tc.params), commit)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.want {
				t.Errorf("Conceal = %s, want %s", got, tc.want)
			}
			if strings.Contains(tc.name, "none") == s.HasSecrets() {
				t.Errorf("HasSecrets = %v", s.HasSecrets())
			}
		})
	}
}

func TestRevealRequest(t *testing.T) {
	in := `{"params":{"a":{"$secret":"k1"},"b":[{"$secret":"k2"}]},"tool":"t"}`
	got, err := action.RevealRequest([]byte(in), func(c string) ([]byte, bool, error) {
		if c == "k1" {
			return []byte(`"clear"`), true, nil
		}
		return nil, false, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"params":{"a":"clear","b":[{"$secret":"k2"}]},"tool":"t"}`; string(got) != want {
		t.Errorf("RevealRequest = %s, want %s", got, want)
	}
}

func TestRevealRequestNested(t *testing.T) {
	// A compensation's parameters quote the request it undoes; its tool
	// may mark them secret again, so a sealed value holds a commitment.
	in := `{"params":{"params":{"$secret":"outer"}},"tool":"undo"}`
	values := map[string]string{"outer": `{"password":{"$secret":"inner"},"user":"bob"}`, "inner": `"pw-clear"`}
	got, err := action.RevealRequest([]byte(in), func(c string) ([]byte, bool, error) {
		v, ok := values[c]
		return []byte(v), ok, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"params":{"params":{"password":"pw-clear","user":"bob"}},"tool":"undo"}`; string(got) != want {
		t.Errorf("RevealRequest = %s, want %s", got, want)
	}
}
