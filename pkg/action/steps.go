package action

import (
	"encoding/json"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/steward-run/steward/pkg/errs"
)

// The work of checking a value against a schema, measured before the
// library does it: the value's depth and numbers, then an upper bound on
// the subschemas the check applies to its parts, and what each costs.

// MaxNumberExponent bounds a number's decimal exponent in a value checked
// against a schema: the library compares numbers exactly, and 1e999999 is
// a million-digit integer.
const MaxNumberExponent = 400

// measureValue checks that v nests no deeper than MaxValueDepth and holds
// no number past MaxNumberExponent.
func measureValue(v any, depth int) error {
	switch v := v.(type) {
	case json.Number:
		return measureNumber(string(v))
	case map[string]any:
		if depth > MaxValueDepth {
			return tooLarge("nest deeper than %d levels", MaxValueDepth)
		}
		for _, e := range v {
			if err := measureValue(e, depth+1); err != nil {
				return err
			}
		}
	case []any:
		if depth > MaxValueDepth {
			return tooLarge("nest deeper than %d levels", MaxValueDepth)
		}
		for _, e := range v {
			if err := measureValue(e, depth+1); err != nil {
				return err
			}
		}
	}
	return nil
}

// measureNumber refuses a number literal whose size or exponent the
// library would spend long on.
func measureNumber(lit string) error {
	if len(lit) > 2*MaxNumberExponent {
		return tooLarge("holds a number of %d digits; the limit is %d", len(lit), 2*MaxNumberExponent)
	}
	if i := strings.IndexAny(lit, "eE"); i >= 0 {
		if exp, err := strconv.Atoi(strings.TrimPrefix(lit[i+1:], "+")); err != nil || exp > MaxNumberExponent || exp < -MaxNumberExponent {
			return tooLarge("holds the number %s, past the exponent limit of %d", clip(lit), MaxNumberExponent)
		}
	}
	return nil
}

// node is a subschema reduced to what steps needs: which subschemas apply
// to the same value, and which to its parts.
type node struct {
	ref       string // "" for none; followed through bounds.nodes
	pattern   int    // instructions of "pattern", matched against a string
	keyRegexp int    // instructions of the patternProperties keys, matched against each key
	enum      int    // entries of "enum", each compared with the value
	names     int    // names in "required", "dependentRequired" and "dependencies", each looked up
	format    int    // "format"s (other than regex) that scan the whole string
	inPlace   []*node
	props     map[string]*node
	eachProp  []*node // patternProperties (all assumed to match), additional…, unevaluated…
	propNames *node
	prefix    []*node
	eachItem  []*node
	// For Conceal, which must know exactly which properties a subschema
	// applies to: the secret mark, and eachProp by keyword.
	secret      bool
	patterns    []patternNode
	additional  *node
	unevaluated *node
}

// patternNode is one entry of patternProperties; a nil re matches every
// key (a pattern that did not compile, which the compiler refuses anyway).
type patternNode struct {
	re *regexp.Regexp
	n  *node
}

// nodeOf builds the node of s, once per subschema.
func (b *bounds) nodeOf(s any) *node {
	m, ok := s.(map[string]any)
	if !ok {
		return nil // a boolean schema does no work below it
	}
	key := reflect.ValueOf(m).UnsafePointer()
	if n, ok := b.nodes[key]; ok {
		return n
	}
	n := &node{}
	b.nodes[key] = n
	n.measure(m)
	n.secret = m["writeOnly"] == true || m[SecretKeyword] == true
	b.secrets = b.secrets || n.secret
	b.children(n, m)
	return n
}

// measure sets the costs of checking a value against m itself, its
// subschemas aside.
func (n *node) measure(m map[string]any) {
	if ref, ok := m["$ref"].(string); ok {
		n.ref = ref
	}
	// A pattern that does not compile is refused by the compiler; here it
	// counts as the largest.
	insts := func(expr string) int {
		if i, err := PatternInsts(expr); err == nil {
			return i
		}
		return MaxPatternInsts
	}
	if p, ok := m["pattern"].(string); ok {
		n.pattern = insts(p)
	}
	if f, _ := m["format"].(string); f == "regex" {
		n.pattern += MaxPatternInsts // the value is compiled as one
	}
	for k := range mapOf(m["patternProperties"]) {
		n.keyRegexp += insts(k)
	}
	if e, ok := m["enum"].([]any); ok {
		n.enum = len(e)
	}
	if r, ok := m["required"].([]any); ok {
		n.names += len(r)
	}
	for _, k := range []string{"dependentRequired", "dependencies"} {
		for _, v := range mapOf(m[k]) {
			if l, ok := v.([]any); ok {
				n.names += len(l)
			}
		}
	}
	if f, _ := m["format"].(string); f != "" && f != "regex" {
		n.format = 1
	}
}

// children sets n's subschemas from m's, by how each applies: in place, to
// each property, to each item.
func (b *bounds) children(n *node, m map[string]any) {
	add := func(l *[]*node, s any) {
		if isSchema(s) {
			if c := b.nodeOf(s); c != nil {
				*l = append(*l, c)
			}
		}
	}
	for _, k := range []string{"not", "if", "then", "else"} {
		add(&n.inPlace, m[k])
	}
	for _, k := range []string{"allOf", "anyOf", "oneOf"} {
		l, _ := m[k].([]any)
		for _, sub := range l {
			add(&n.inPlace, sub)
		}
	}
	for _, k := range []string{"dependentSchemas", "dependencies"} {
		d, _ := m[k].(map[string]any)
		for _, sub := range d {
			add(&n.inPlace, sub)
		}
	}
	if p, ok := m["properties"].(map[string]any); ok {
		n.props = make(map[string]*node, len(p))
		for k, sub := range p {
			n.props[k] = b.nodeOf(sub)
		}
	}
	patterns, _ := m["patternProperties"].(map[string]any)
	for expr, sub := range patterns {
		add(&n.eachProp, sub)
		re, _ := regexp.Compile(expr)
		n.patterns = append(n.patterns, patternNode{re: re, n: b.nodeOf(sub)})
	}
	add(&n.eachProp, m["additionalProperties"])
	add(&n.eachProp, m["unevaluatedProperties"])
	n.additional = b.nodeOf(m["additionalProperties"])
	n.unevaluated = b.nodeOf(m["unevaluatedProperties"])
	n.propNames = b.nodeOf(m["propertyNames"])
	prefix, _ := m["prefixItems"].([]any)
	if l, ok := m["items"].([]any); ok {
		prefix = l // before 2020-12, items as a list is prefixItems
	}
	for _, sub := range prefix {
		n.prefix = append(n.prefix, b.nodeOf(sub))
	}
	for _, k := range []string{"items", "additionalItems", "contains", "unevaluatedItems"} {
		add(&n.eachItem, m[k])
	}
}

// steps counts, up to MaxValidationSteps, how many times checking v against
// s applies a subschema to a part of v. It over-counts — every branch of
// anyOf, every pattern of patternProperties is assumed to apply — so it is
// an upper bound on the library's work, found without doing that work.
// open holds the $refs followed at this part of v: following one again
// without moving into v is a cycle the library refuses, so it ends here.
func (b *bounds) steps(s *node, v any, open []string, n *int) error {
	if *n++; *n > MaxValidationSteps {
		return tooLarge("would take more than %d steps to check against the schema", MaxValidationSteps)
	}
	if s == nil {
		return nil
	}
	// Comparing with every entry of an enum, matching a pattern: work in
	// the same step, counted in steps' units.
	*n += (s.enum + s.names) / enumPerStep
	if str, ok := v.(string); ok {
		*n += len(str)*s.pattern/patternBytesPerStep + len(str)*s.format/formatBytesPerStep
	}
	if obj, ok := v.(map[string]any); ok && s.keyRegexp > 0 {
		for key := range obj {
			*n += len(key) * s.keyRegexp / patternBytesPerStep
		}
	}
	if *n > MaxValidationSteps {
		return tooLarge("would take more than %d steps to check against the schema", MaxValidationSteps)
	}
	if s.ref != "" && !slices.Contains(open, s.ref) {
		target, found := b.targets[s.ref]
		if !found {
			return errs.New(errs.Invalid, "$ref %q was not resolved", clip(s.ref))
		}
		if err := b.steps(target, v, append(open, s.ref), n); err != nil {
			return err
		}
	}
	for _, sub := range s.inPlace {
		if err := b.steps(sub, v, open, n); err != nil {
			return err
		}
	}
	switch v := v.(type) {
	case map[string]any:
		for key, part := range v {
			if sub, ok := s.props[key]; ok {
				if err := b.steps(sub, part, nil, n); err != nil {
					return err
				}
			}
			for _, sub := range s.eachProp {
				if err := b.steps(sub, part, nil, n); err != nil {
					return err
				}
			}
			if s.propNames != nil {
				if err := b.steps(s.propNames, key, nil, n); err != nil {
					return err
				}
			}
		}
	case []any:
		for i, part := range v {
			if i < len(s.prefix) {
				if err := b.steps(s.prefix[i], part, nil, n); err != nil {
					return err
				}
			}
			for _, sub := range s.eachItem {
				if err := b.steps(sub, part, nil, n); err != nil {
					return err
				}
			}
		}
	}
	return nil
}
