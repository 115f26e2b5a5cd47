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
