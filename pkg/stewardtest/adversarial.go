package stewardtest

import (
	"fmt"
	"strings"
)

// Adversarial inputs: documents built to make a parser, compiler or
// validator work hard while staying small. Tests and benchmarks of the
// limits on work per request (action.MaxSchemaDepth and its siblings,
// control's CEL limits) share them, so that "at the limit" and "past the
// limit" mean the same documents everywhere.

// DeepSchema is a JSON Schema nesting levels "items" inside one another:
// each level adds two JSON levels and ten bytes, so 3,000 levels is about
// 30 KB.
func DeepSchema(levels int) string {
	return strings.Repeat(`{"items":`, levels) + `{}` + strings.Repeat(`}`, levels)
}

// WideSchema is an object schema with n properties, each {"type":"string"}
// when typed, else true.
func WideSchema(n int, typed bool) string {
	var b strings.Builder
	b.WriteString(`{"type":"object","properties":{`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		if typed {
			fmt.Fprintf(&b, `"p%d":{"type":"string"}`, i)
		} else {
			fmt.Fprintf(&b, `"%x":true`, i)
		}
	}
	b.WriteString(`}}`)
	return b.String()
}

// RefChainSchema is a schema whose root refers to d0, d0 to d1, … up to
// d(n-1): a chain of n $refs.
func RefChainSchema(n int) string {
	var b strings.Builder
	b.WriteString(`{"$ref":"#/$defs/d0","$defs":{`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		if i == n-1 {
			fmt.Fprintf(&b, `"d%d":{"type":"object"}`, i)
		} else {
			fmt.Fprintf(&b, `"d%d":{"$ref":"#/$defs/d%d"}`, i, i+1)
		}
	}
	b.WriteString(`}}`)
	return b.String()
}

// RefFanSchema is a schema of n definitions where each refers to the next
// twice, in anyOf: under 2 KB for n = 30, yet following its $refs unfolds
// into 2^n subschemas.
func RefFanSchema(n int) string { return RefFanSchemaUnder("$defs", n) }

// RefFanSchemaUnder is RefFanSchema with its definitions under key, which
// need not be a keyword: OpenAPI keeps its schemas under "components".
func RefFanSchemaUnder(key string, n int) string {
	var b strings.Builder
	fmt.Fprintf(&b, `{"$ref":"#/%s/d0",%q:{`, key, key)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		if i == n-1 {
			fmt.Fprintf(&b, `"d%d":false`, i)
		} else {
			fmt.Fprintf(&b, `"d%d":{"anyOf":[{"$ref":"#/%s/d%d"},{"$ref":"#/%s/d%d"}]}`, i, key, i+1, key, i+1)
		}
	}
	b.WriteString(`}}`)
	return b.String()
}

// RecursiveFanSchema is a small schema that applies itself twice to the
// property "x" of anything it checks, and requires one: checking
// {"x":{"x":…{}}} n deep fails at the bottom, every anyOf tries both
// branches, and that takes 2^n steps. Its bomb is the value, not the
// schema; see NestedX.
const RecursiveFanSchema = `{"type":"object","required":["x"],"properties":{"x":{"anyOf":[{"$ref":"#"},{"$ref":"#"}]}}}`

// NestedX is {"x":{"x":…{}}} with depth objects.
func NestedX(depth int) string {
	return strings.Repeat(`{"x":`, depth-1) + `{}` + strings.Repeat(`}`, depth-1)
}

// NestedArrays is a JSON array nested as deeply as size bytes allow,
// "[[[…]]]".
func NestedArrays(size int) string {
	return strings.Repeat("[", size/2) + strings.Repeat("]", size/2)
}

// NestedComprehensions is a CEL expression of depth comprehensions, each
// inside the previous one's predicate, over lists of width elements:
// evaluating it takes width^depth steps.
func NestedComprehensions(depth, width int) string {
	list := "[" + strings.TrimSuffix(strings.Repeat("1,", width), ",") + "]"
	expr := "true"
	for i := range depth {
		expr = fmt.Sprintf("%s.all(v%d, %s)", list, i, expr)
	}
	return expr
}
