package policy

import (
	"encoding/json"
	"iter"
	"maps"
	"slices"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/rego"
)

// inputOption hands input to a prepared query. Given Go values, OPA first
// copies every object and array of them (util.RoundTripFast) to turn
// other Go types into JSON's; a document that holds only JSON's types —
// what encoding/json decodes with UseNumber, as governance builds it —
// is converted here without that copy, to the same value.
func inputOption(input map[string]any) rego.EvalOption {
	if jsonShaped(input, 0) {
		if v, err := ast.InterfaceToValue(input); err == nil {
			return rego.EvalParsedInput(v)
		}
	}
	return rego.EvalInput(input)
}

// maxShapeDepth stops the check on a document deeper than any input is
// allowed to be; OPA's own path takes those.
const maxShapeDepth = 200

// jsonShaped reports whether v holds only nil, bool, string, json.Number,
// and non-nil map[string]any and []any of them: the values OPA's copy
// leaves as they are. (A nil map or slice is null to it, but an empty
// object or array to ast.InterfaceToValue.)
func jsonShaped(v any, depth int) bool {
	if depth > maxShapeDepth {
		return false
	}
	switch x := v.(type) {
	case nil, bool, string, json.Number:
		return true
	case map[string]any:
		return x != nil && allShaped(maps.Values(x), depth+1)
	case []any:
		return x != nil && allShaped(slices.Values(x), depth+1)
	}
	return false
}

func allShaped(vs iter.Seq[any], depth int) bool {
	for v := range vs {
		if !jsonShaped(v, depth) {
			return false
		}
	}
	return true
}
