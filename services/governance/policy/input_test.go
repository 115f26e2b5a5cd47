package policy

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/rego"
	"github.com/open-policy-agent/opa/v1/util"
)

// TestInputOptionGivesOPAsValue: an input converted here is the value OPA
// makes of it itself (rego's parseRawInput); any other is left to OPA.
func TestInputOptionGivesOPAsValue(t *testing.T) {
	deep := any(map[string]any{})
	for range maxShapeDepth + 5 {
		deep = map[string]any{"a": deep}
	}
	tests := []struct {
		name      string
		input     map[string]any
		converted bool
	}{
		{"json", map[string]any{"a": []any{json.Number("1"), json.Number("2.5e-7"), nil, true, "é"}, "b": map[string]any{}, "c": []any{}}, true},
		{"empty", map[string]any{}, true},
		{"nil document", nil, false},
		{"nil object", map[string]any{"a": map[string]any(nil)}, false},
		{"nil array", map[string]any{"a": []any(nil)}, false},
		{"float64", map[string]any{"n": 0.0000001}, false},
		{"[]string", map[string]any{"s": []string{"x"}}, false},
		{"int", map[string]any{"n": 3}, false},
		{"too deep", map[string]any{"d": deep}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var ectx rego.EvalContext
			inputOption(tt.input)(&ectx)
			if got := ectx.ParsedInput(); (got != nil) != tt.converted {
				t.Fatalf("converted = %v, want %v", got != nil, tt.converted)
			}
			if !tt.converted {
				return
			}
			raw := any(tt.input)
			if err := util.RoundTripFast(&raw); err != nil {
				t.Fatal(err)
			}
			want, err := ast.InterfaceToValue(raw)
			if err != nil {
				t.Fatal(err)
			}
			if got := ectx.ParsedInput(); got.Compare(want) != 0 || got.String() != want.String() {
				t.Fatalf("value %s, OPA's %s", got, want)
			}
		})
	}
	if strings.Count(ast.MustInterfaceToValue(deep).String(), "{") < maxShapeDepth {
		t.Fatal("the deep document is not deep")
	}
}

// TestPartStandsForItsDocument: a document holding Parts is the value
// OPA makes of the same document holding what NewPart was given, whether
// inputOption converts it or leaves it to OPA (a member not of JSON's
// types, a Part below the top level).
func TestPartStandsForItsDocument(t *testing.T) {
	task := map[string]any{"id": "t1", "n": json.Number("1e+21"), "l": []any{"é", nil, true}, "m": map[string]any{}}
	part, err := NewPart(task)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name          string
		with, without map[string]any
		converted     bool
	}{
		{"parts", map[string]any{"task": part, "a": map[string]any{"id": "a"}}, map[string]any{"task": task, "a": map[string]any{"id": "a"}}, true},
		{"parts and an int", map[string]any{"task": part, "n": 3}, map[string]any{"task": task, "n": 3}, false},
		{"a part deeper", map[string]any{"x": map[string]any{"task": part}}, map[string]any{"x": map[string]any{"task": task}}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var ectx rego.EvalContext
			inputOption(tt.with)(&ectx)
			got := ectx.ParsedInput()
			if (got != nil) != tt.converted {
				t.Fatalf("converted = %v, want %v", got != nil, tt.converted)
			}
			if got == nil { // OPA's route (rego's parseRawInput)
				got = opaValue(t, tt.with, util.RoundTrip)
			}
			if want := opaValue(t, tt.without, util.RoundTripFast); got.Compare(want) != 0 {
				t.Fatalf("value %s, want %s", got, want)
			}
		})
	}
	if _, err := NewPart(map[string]any{"n": 3}); err == nil {
		t.Fatal("NewPart took an int")
	}
}

// opaValue is doc as OPA makes it its own, through roundTrip.
func opaValue(t *testing.T, doc map[string]any, roundTrip func(*any) error) ast.Value {
	t.Helper()
	raw := any(doc)
	if err := roundTrip(&raw); err != nil {
		t.Fatal(err)
	}
	v, err := ast.InterfaceToValue(raw)
	if err != nil {
		t.Fatal(err)
	}
	return v
}
