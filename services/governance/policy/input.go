package policy

import (
	"encoding/json"
	"fmt"
	"iter"
	"maps"
	"slices"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/rego"
)

// Part is a member of input documents converted once to the value OPA
// evaluates: a tool's facts, a task's, which many evaluations share. A
// document given to Evaluate may hold Parts as its members (at the top
// level); each stands for the document NewPart was given. A Part is
// read-only, and safe to share by evaluations running at once.
type Part struct{ t *ast.Term }

// NewPart converts doc, which must hold only JSON's types (nil, bool,
// string, json.Number, non-nil map[string]any and []any), as the input
// documents of Evaluate do, or NewPart fails.
func NewPart(doc any) (Part, error) {
	if !jsonShaped(doc, 0) {
		return Part{}, fmt.Errorf("policy input part: %T holds a value that is not one of JSON's types", doc)
	}
	v, err := ast.InterfaceToValue(doc)
	if err != nil {
		return Part{}, fmt.Errorf("policy input part: %w", err)
	}
	// An object sorts its keys in place the first time it is walked, and
	// a rule's `with input…` copies the input unguarded: two evaluations
	// at once could copy a part half sorted, keys twice or missing. Walk
	// it once here, before it is shared.
	if _, err := ast.JSON(v); err != nil {
		return Part{}, fmt.Errorf("policy input part: %w", err)
	}
	return Part{ast.NewTerm(v)}, nil
}

// Term is p as OPA's term, for a document built with OPA's values
// (EvaluateValue), anywhere in it: shared, and not to be changed, as
// OPA's own interned terms are.
func (p Part) Term() *ast.Term { return p.t }

// MarshalJSON writes the document p stands for, so that an input holding
// p goes through JSON as the document would (OPA's own route, which
// inputOption leaves some inputs to).
func (p Part) MarshalJSON() ([]byte, error) {
	doc, err := ast.JSON(p.t.Value)
	if err != nil {
		return nil, err
	}
	return json.Marshal(doc)
}

// inputOption hands input to a prepared query. Given Go values, OPA first
// copies every object and array of them (util.RoundTripFast) to turn
// other Go types into JSON's; a document that holds only JSON's types —
// what encoding/json decodes with UseNumber, as governance builds it —
// is converted here without that copy, to the same value, its Parts
// taken as they were converted.
func inputOption(input map[string]any) rego.EvalOption {
	if jsonShaped(input, 0) {
		if v, err := ast.InterfaceToValue(withParts(input)); err == nil {
			return rego.EvalParsedInput(v)
		}
	}
	return rego.EvalInput(input)
}

// withParts is input with each Part member replaced by its value, which
// ast.InterfaceToValue takes as it is; input itself when it has none.
func withParts(input map[string]any) map[string]any {
	var out map[string]any
	for k, v := range input {
		p, ok := v.(Part)
		if !ok {
			continue
		}
		if out == nil {
			out = maps.Clone(input)
		}
		out[k] = p.t.Value
	}
	if out == nil {
		return input
	}
	return out
}

// maxShapeDepth stops the check on a document deeper than any input is
// allowed to be; OPA's own path takes those.
const maxShapeDepth = 200

// jsonShaped reports whether v holds only nil, bool, string, json.Number,
// and non-nil map[string]any and []any of them: the values OPA's copy
// leaves as they are, and Parts as members of the document (depth 1).
// (A nil map or slice is null to it, but an empty object or array to
// ast.InterfaceToValue.)
func jsonShaped(v any, depth int) bool {
	if depth > maxShapeDepth {
		return false
	}
	switch x := v.(type) {
	case nil, bool, string, json.Number:
		return true
	case Part:
		return depth == 1 && x.t != nil // a member of the document
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
