package action_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/steward-run/steward/pkg/action"
)

func TestCanonicalIsIndependentOfKeyOrderAndSpacing(t *testing.T) {
	a, err := action.Canonical(action.Request{TaskID: "t", Tool: "mail", ToolVersion: "1", Target: "x",
		Params: []byte(`{"b": [1, 2.50, {"z": true, "a": null}], "a": "<&>é"}`)})
	if err != nil {
		t.Fatal(err)
	}
	b, err := action.Canonical(action.Request{TaskID: "t", Tool: "mail", ToolVersion: "1", Target: "x",
		Params: []byte(`{"a":"<&>é","b":[1.0,2.5,{"a":null,"z":true}]}`)})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"params":{"a":"<&>é","b":[1,2.5,{"a":null,"z":true}]},"target":"x","task_id":"t","tool":"mail","tool_version":"1"}`
	if string(a) != want || string(b) != want {
		t.Fatalf("canonical forms:\n %s\n %s\nwant\n %s", a, b, want)
	}
}

func TestCanonicalRefusesNonObjects(t *testing.T) {
	for _, p := range []string{`[1]`, `"x"`, `{"a":`, `{"a":1} {"b":2}x`} {
		if _, err := action.Canonical(action.Request{Params: []byte(p)}); err == nil {
			t.Errorf("params %s were accepted", p)
		}
	}
}

func TestIdentitiesAreStableAndDistinct(t *testing.T) {
	id := action.ID("t1", "p1")
	if id != action.ID("t1", "p1") || id == action.ID("t1", "p2") || id == action.ID("t2", "p1") {
		t.Fatal("action ids must be a function of task and proposal")
	}
	rh := action.RequestHash([]byte("{}"))
	if action.Hash(id, rh) == action.Hash(id, action.RequestHash([]byte(`{"a":1}`))) {
		t.Fatal("an edited request must get a new action hash")
	}
	if action.OpKey("t1", id) == action.OpKey("t1", action.ID("t1", "p2")) {
		t.Fatal("two actions must not share an op key")
	}
}

func TestSchemaNamesThePath(t *testing.T) {
	s, err := action.NewHeavy().CompileSchema(`{"type":"object","required":["to"],"properties":{
		"to":{"type":"array","items":{"type":"string","format":"email"}},
		"amount":{"type":"integer","minimum":1}},"additionalProperties":false}`)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct{ params, path string }{
		{`{"to":["a@b.c", 7]}`, "/to/1"},
		{`{"to":[],"amount":0}`, "/amount"},
		{`{}`, ""},
		{`{"to":[],"extra":1}`, ""},
	}
	for _, tt := range tests {
		err := s.Validate(context.Background(), []byte(tt.params))
		var v *action.Violation
		if !errors.As(err, &v) {
			t.Errorf("%s: err = %v, want a violation", tt.params, err)
			continue
		}
		if v.Path != tt.path || v.Reason == "" {
			t.Errorf("%s: violation at %q (%s), want %q", tt.params, v.Path, v.Reason, tt.path)
		}
	}
	if err := s.Validate(context.Background(), []byte(`{"to":["a@b.c"],"amount":3}`)); err != nil {
		t.Fatalf("valid params refused: %v", err)
	}
}

func TestSchemaMayNotLoadOtherDocuments(t *testing.T) {
	_, err := action.NewHeavy().CompileSchema(`{"$ref":"https://example.com/schema.json"}`)
	if err == nil || !strings.Contains(err.Error(), "self-contained") {
		t.Fatalf("err = %v, want a refusal to load", err)
	}
	if _, err := action.NewHeavy().CompileSchema(`{"type": 12}`); err == nil {
		t.Fatal("an invalid schema compiled")
	}
}

// TestCanonicalStringsAreEncodingJSONs: a string's canonical form is what
// encoding/json writes without HTML escaping, for every byte, rune and
// invalid sequence that it treats specially.
func TestCanonicalStringsAreEncodingJSONs(t *testing.T) {
	cases := []string{"", "plain", "é ü 日本 🙂", "<&>", "\u2028\u2029", "a\u2028b", "\xed\xa0\x80", "\xf4\x90\x80\x80", "ok\xff", "\xe6\x97"}
	for c := range 256 {
		cases = append(cases, string([]byte{byte(c)}), "x"+string([]byte{byte(c)})+"é")
	}
	for _, s := range cases {
		var want strings.Builder
		enc := json.NewEncoder(&want)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(s); err != nil {
			t.Fatal(err)
		}
		got, err := action.CanonicalJSON(s)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != strings.TrimSuffix(want.String(), "\n") {
			t.Errorf("%q: canonical %s, encoding/json %s", s, got, want.String())
		}
	}
}
