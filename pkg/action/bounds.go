package action

import (
	"encoding/json"
	"fmt"
	"net/url"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"unsafe"

	"github.com/steward-run/steward/pkg/errs"
)

// Limits on a JSON Schema (a tool's parameters or result schema) and on the
// JSON values checked against one. Compiling a schema and checking a value
// take time that grows with depth and with every $ref followed — in the
// schema library, faster than linearly — so the document is measured first,
// on its raw JSON, and refused before it reaches the compiler. Real schemas
// stay far inside them; each answer past one is errs.TooLarge. Inside
// them, compiling a schema takes at most tens of milliseconds and checking
// a value about as long (BenchmarkSchemaLimits and BenchmarkValidateLimits
// measure both); a refusal takes a few.
const (
	// MaxSchemaBytes bounds a schema document.
	MaxSchemaBytes = 64 << 10
	// MaxSchemaDepth bounds how deeply a schema document nests JSON objects
	// and arrays (a property's schema sits two levels below its parent's).
	MaxSchemaDepth = 64
	// MaxSchemaKeys bounds the object keys in a schema document, counted
	// over the whole document: property names, keywords and keys inside
	// values such as "const" and "default" alike.
	MaxSchemaKeys = 4096
	// MaxSchemaRefChain bounds how many $refs are followed one inside
	// another: a $ref whose target holds a $ref whose target holds one, …
	// A $ref back to a schema it is already inside (recursion) ends a chain.
	MaxSchemaRefChain = 32
	// MaxSchemaExpansion bounds the subschemas of a schema with every $ref
	// replaced by a copy of its target, a recursive $ref counting as one.
	// It stops a few small definitions that refer to each other twice over
	// from unfolding into millions.
	MaxSchemaExpansion = 10_000
	// MaxValueDepth bounds how deeply a value checked against a schema
	// (parameters, a result) nests JSON objects and arrays.
	MaxValueDepth = 64
	// MaxValidationSteps bounds the work of checking one value: the number
	// of times a subschema is applied to a part of it. A recursive schema
	// can apply itself to one part several times over, and that multiplies
	// with depth; past this the value is refused before it is checked. At
	// the limit, a check that fails in every branch takes the library tens
	// of milliseconds and about 10 MB of garbage.
	MaxValidationSteps = 25_000
	// HeavyValidationSteps is the work past which a check waits its turn:
	// no more than GOMAXPROCS checks and compilations this heavy run at
	// once, so that many requests at the limits at the same time add time,
	// not memory.
	HeavyValidationSteps = 2_500
	// enumPerStep is how many entries of an enum (or names of a
	// "required") the library compares with a value in about the time of
	// one step (a number compares as an exact rational).
	enumPerStep = 4
	// formatBytesPerStep is how many bytes of a string a "format" check
	// scans in about the time of one step.
	formatBytesPerStep = 256
	// HeavySchemaKeys is the size, in object keys, past which compiling a
	// schema waits its turn in the same way: at MaxSchemaKeys the library
	// makes about 25 MB of garbage.
	HeavySchemaKeys = 512
)

// tooLarge is the error for a limit passed; the caller names the field.
func tooLarge(format string, args ...any) error {
	return &errs.Error{Code: errs.TooLarge, Message: fmt.Sprintf(format, args...)}
}

// bounds is what measuring a schema document found: the targets of its
// $refs, resolved once so that checking a value can follow them cheaply.
type bounds struct {
	keys    int // object keys in the document
	root    any
	refs    map[string]any // "$ref" value → the subschema it points to
	nodes   map[unsafe.Pointer]*node
	start   *node            // the root's node
	targets map[string]*node // "$ref" value → its target's node
}

// measureSchema checks doc, already decoded, against the limits above and
// resolves its $refs. A $ref must be a JSON Pointer into the document
// itself ("#" or "#/…"): the tool contract is one document, and pointers
// are what can be resolved without the compiler.
func measureSchema(doc any) (*bounds, error) {
	keys := 0
	if err := measureShape(doc, 1, &keys); err != nil {
		return nil, err
	}
	b := &bounds{keys: keys, root: doc, refs: map[string]any{}}
	if err := b.collectRefs(doc, true); err != nil {
		return nil, err
	}
	n := 0
	if err := b.expand(doc, map[string]bool{}, 0, &n); err != nil {
		return nil, err
	}
	b.nodes = map[unsafe.Pointer]*node{}
	b.start = b.nodeOf(doc)
	b.targets = make(map[string]*node, len(b.refs))
	for ref, target := range b.refs {
		b.targets[ref] = b.nodeOf(target)
	}
	return b, nil
}

// measureShape checks depth and counts keys. It stops at the first limit
// passed, so it never walks further than the limits allow.
func measureShape(v any, depth int, keys *int) error {
	switch v := v.(type) {
	case map[string]any:
		if depth > MaxSchemaDepth {
			return tooLarge("nests deeper than %d levels", MaxSchemaDepth)
		}
		if *keys += len(v); *keys > MaxSchemaKeys {
			return tooLarge("has more than %d object keys", MaxSchemaKeys)
		}
		for _, e := range v {
			if err := measureShape(e, depth+1, keys); err != nil {
				return err
			}
		}
	case []any:
		if depth > MaxSchemaDepth {
			return tooLarge("nests deeper than %d levels", MaxSchemaDepth)
		}
		for _, e := range v {
			if err := measureShape(e, depth+1, keys); err != nil {
				return err
			}
		}
	case json.Number:
		// The library keeps numbers as exact rationals: 1e999999 in a
		// maximum or an enum is a million-digit integer at every use.
		return measureNumber(string(v))
	}
	return nil
}

// Keywords whose values are subschemas, by shape, across the drafts the
// library supports. Everything else is data (const, enum, default, …) and
// holds no $ref that counts.
var (
	oneSubschema = []string{"additionalProperties", "propertyNames", "additionalItems", "contains", "not",
		"if", "then", "else", "unevaluatedItems", "unevaluatedProperties", "contentSchema", "items"}
	subschemaMaps  = []string{"properties", "patternProperties", "$defs", "definitions", "dependentSchemas", "dependencies"}
	subschemaLists = []string{"allOf", "anyOf", "oneOf", "prefixItems", "items"}
)

// subschemas calls f for each subschema directly inside s; withDefs says
// whether $defs and definitions count, which apply only through a $ref.
func subschemas(s map[string]any, withDefs bool, f func(any) error) error {
	for _, k := range oneSubschema {
		if v, ok := s[k]; ok && isSchema(v) {
			if err := f(v); err != nil {
				return err
			}
		}
	}
	for _, k := range subschemaMaps {
		if !withDefs && (k == "$defs" || k == "definitions") {
			continue
		}
		if m, ok := s[k].(map[string]any); ok {
			for _, v := range m {
				if isSchema(v) { // "dependencies" may also hold lists of names
					if err := f(v); err != nil {
						return err
					}
				}
			}
		}
	}
	for _, k := range subschemaLists {
		if l, ok := s[k].([]any); ok {
			for _, v := range l {
				if err := f(v); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

func isSchema(v any) bool {
	switch v.(type) {
	case map[string]any, bool:
		return true
	}
	return false
}

// collectRefs checks every $ref's form and resolves it. A nested $id would
// start a new base for the pointers inside it, and $dynamicRef and
// $recursiveRef resolve at run time; none is needed by a tool contract.
func (b *bounds) collectRefs(s any, root bool) error {
	m, ok := s.(map[string]any)
	if !ok {
		return nil
	}
	if _, ok := m["$id"]; ok && !root {
		return errs.New(errs.Invalid, "$id is allowed only at the top: a tool contract's schema is one document")
	}
	for _, k := range []string{"$dynamicRef", "$recursiveRef"} {
		if _, ok := m[k]; ok {
			return errs.New(errs.Invalid, "%s is not supported: use $ref with a JSON Pointer such as \"#/$defs/item\"", k)
		}
	}
	// Patterns are measured here, so that one past its limits is named in
	// a sentence rather than in the compiler's report on the metaschema.
	if p, ok := m["pattern"].(string); ok {
		if _, err := PatternInsts(p); err != nil {
			return errs.New(errs.Invalid, "pattern %q: %v", clip(p), err)
		}
	}
	for k := range mapOf(m["patternProperties"]) {
		if _, err := PatternInsts(k); err != nil {
			return errs.New(errs.Invalid, "patternProperties %q: %v", clip(k), err)
		}
	}
	if r, ok := m["$ref"]; ok {
		ref, ok := r.(string)
		if !ok {
			return errs.New(errs.Invalid, "$ref is not a string")
		}
		if _, done := b.refs[ref]; !done {
			target, err := resolvePointer(b.root, ref)
			if err != nil {
				return err
			}
			b.refs[ref] = target
			// A target may sit anywhere in the document, not only under
			// $defs: the $refs inside it count as much as any.
			if err := b.collectRefs(target, false); err != nil {
				return err
			}
		}
	}
	return subschemas(m, true, func(v any) error { return b.collectRefs(v, false) })
}

// resolvePointer finds the subschema ref points to: "#" is the document,
// "#/a/b" a JSON Pointer in URI fragment form.
func resolvePointer(doc any, ref string) (any, error) {
	if root, _ := doc.(map[string]any); root != nil {
		// An absolute $ref to the document's own $id is a local one.
		if id, _ := root["$id"].(string); id != "" && strings.HasPrefix(ref, strings.TrimSuffix(id, "#")) {
			ref = "#" + strings.TrimPrefix(strings.TrimPrefix(ref, strings.TrimSuffix(id, "#")), "#")
		}
	}
	if name, ok := strings.CutPrefix(ref, "#"); ok && name != "" && !strings.HasPrefix(name, "/") {
		if target := findAnchor(doc, name, 0); target != nil {
			return target, nil
		}
		return nil, errs.New(errs.Invalid, "$ref %q names no $anchor in this schema", clip(ref))
	}
	if ref != "#" && !strings.HasPrefix(ref, "#/") {
		return nil, errs.New(errs.Invalid, "$ref %q: a tool contract must be self-contained; want a JSON Pointer into this schema, such as \"#/$defs/item\"", clip(ref))
	}
	frag, err := url.PathUnescape(ref[1:])
	if err != nil {
		return nil, errs.New(errs.Invalid, "$ref %q: %v", clip(ref), err)
	}
	v := doc
	if frag != "" {
		for _, tok := range strings.Split(frag[1:], "/") {
			tok = strings.NewReplacer("~1", "/", "~0", "~").Replace(tok)
			var next any
			switch c := v.(type) {
			case map[string]any:
				next = c[tok]
			case []any:
				if i, err := strconv.Atoi(tok); err == nil && i >= 0 && i < len(c) {
					next = c[i]
				}
			}
			if next == nil {
				return nil, errs.New(errs.Invalid, "$ref %q points at nothing", clip(ref))
			}
			v = next
		}
	}
	if !isSchema(v) {
		return nil, errs.New(errs.Invalid, "$ref %q does not point at a schema", clip(ref))
	}
	return v, nil
}

// findAnchor returns the subschema of v whose $anchor is name, or nil.
// depth stops it at MaxSchemaDepth, which measureShape has checked.
func findAnchor(v any, name string, depth int) any {
	if depth > MaxSchemaDepth {
		return nil
	}
	switch c := v.(type) {
	case map[string]any:
		if a, _ := c["$anchor"].(string); a == name {
			return c
		}
		for _, e := range c {
			if f := findAnchor(e, name, depth+1); f != nil {
				return f
			}
		}
	case []any:
		for _, e := range c {
			if f := findAnchor(e, name, depth+1); f != nil {
				return f
			}
		}
	}
	return nil
}

// expand counts the subschemas of s with every $ref replaced by its
// target, stopping past MaxSchemaExpansion; open holds the $refs being
// expanded on the way here, so that a recursive one counts once, and
// chain how many of them there are.
func (b *bounds) expand(s any, open map[string]bool, chain int, n *int) error {
	if *n++; *n > MaxSchemaExpansion {
		return tooLarge("unfolds into more than %d subschemas when its $refs are followed", MaxSchemaExpansion)
	}
	m, ok := s.(map[string]any)
	if !ok {
		return nil
	}
	if ref, ok := m["$ref"].(string); ok && !open[ref] {
		if chain+1 > MaxSchemaRefChain {
			return tooLarge("follows more than %d $refs one inside another", MaxSchemaRefChain)
		}
		target, found := b.refs[ref]
		if !found {
			return errs.New(errs.Invalid, "$ref %q was not resolved", clip(ref))
		}
		open[ref] = true
		err := b.expand(target, open, chain+1, n)
		delete(open, ref)
		if err != nil {
			return err
		}
	}
	return subschemas(m, false, func(v any) error { return b.expand(v, open, chain, n) })
}

// clip keeps a quoted $ref short in an error message.
func clip(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}

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
}

func mapOf(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
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
	for _, sub := range patterns {
		add(&n.eachProp, sub)
	}
	add(&n.eachProp, m["additionalProperties"])
	add(&n.eachProp, m["unevaluatedProperties"])
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
	return n
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
