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
			s, err := action.NewHeavy().CompileSchema(tc.schema)
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

// TestRevealRequestBoundsWhatItOpens: a proposer who has seen the
// commitment of a value of its task may quote it many times, in a value
// that is itself secret, and that value's commitment many times again:
// each level multiplies the body. RevealRequest refuses once what it has
// opened passes MaxRevealed, instead of building the body.
func TestRevealRequestBoundsWhatItOpens(t *testing.T) {
	fan := func(c string, n int) string {
		return "[" + strings.TrimSuffix(strings.Repeat(`{"$secret":"`+c+`"},`, n), ",") + "]"
	}
	values := map[string]string{
		"a": `"` + strings.Repeat("x", 1000) + `"`,
		"b": fan("a", 100), // 100 KB opened
		"c": fan("b", 100), // 10 MB opened
	}
	open := func(c string) ([]byte, bool, error) {
		v, ok := values[c]
		return []byte(v), ok, nil
	}
	if _, err := action.RevealRequest([]byte(`{"params":{"s":{"$secret":"b"}}}`), open); err != nil {
		t.Fatalf("100 KB opened: %v", err)
	}
	got, err := action.RevealRequest([]byte(`{"params":{"s":{"$secret":"c"}}}`), open)
	if err == nil {
		t.Fatalf("RevealRequest built a body of %d bytes; want a refusal past %d", len(got), action.MaxRevealed)
	}
	if strings.Contains(err.Error(), "xxx") {
		t.Errorf("the refusal quotes a value: %v", err)
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

func TestSecretWithin(t *testing.T) {
	for _, tc := range []struct {
		schema, key string
		want        bool
	}{
		{`{"properties":{"pw":{"writeOnly":true},"u":{"type":"string"}}}`, "pw", true},
		{`{"properties":{"pw":{"writeOnly":true},"u":{"type":"string"}}}`, "u", false},
		{`{"properties":{"auth":{"properties":{"token":{"writeOnly":true}}}}}`, "auth", true},
		{`{"$defs":{"s":{"x-steward-secret":true}},"properties":{"l":{"items":{"$ref":"#/$defs/s"}}}}`, "l", true},
		{`{"properties":{"name":{}},"additionalProperties":{"writeOnly":true}}`, "other", true},
		{`{"properties":{"name":{}},"additionalProperties":{"writeOnly":true}}`, "name", false},
		{`{"patternProperties":{"^sec_":{"writeOnly":true}}}`, "sec_a", true},
		{`{"patternProperties":{"^sec_":{"writeOnly":true}}}`, "plain", false},
		{`{"properties":{"p":{"anyOf":[{"type":"number"},{"items":{"writeOnly":true}}]}}}`, "p", true},
		{`{"$defs":{"t":{"properties":{"next":{"$ref":"#/$defs/t"}}}},"properties":{"t":{"$ref":"#/$defs/t"},"pw":{"writeOnly":true}}}`, "t", false},
	} {
		s, err := action.NewHeavy().CompileSchema(tc.schema)
		if err != nil {
			t.Fatal(err)
		}
		if got := s.SecretWithin(tc.key); got != tc.want {
			t.Errorf("%s: SecretWithin(%s) = %v, want %v", tc.schema, tc.key, got, tc.want)
		}
	}
}
