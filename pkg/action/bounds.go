package action

import (
	"encoding/json"
	"fmt"
	"net/url"
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
	secrets bool             // some subschema marks a value secret
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

func mapOf(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
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
	// The metaschema checks writeOnly's type but knows nothing of ours: a
	// mark such as "yes" would otherwise mark nothing, and show the value.
	if mark, ok := m[SecretKeyword]; ok {
		if _, ok := mark.(bool); !ok {
			return errs.New(errs.Invalid, "%s must be true or false", SecretKeyword)
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
func clip(s string) string { return errs.Cut(s, errs.MaxEcho) }
