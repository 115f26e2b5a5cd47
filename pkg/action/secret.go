package action

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/steward-run/steward/pkg/errs"
)

// SecretKeyword marks a subschema's values secret, as "writeOnly": true
// does: {"type":"string","x-steward-secret":true}.
const SecretKeyword = "x-steward-secret"

// SecretField is the one key of a commitment object, which stands in the
// canonical request where a secret value was: {"$secret":"hmac-sha256:…"}.
const SecretField = "$secret"

// HasSecrets reports whether the schema marks any value secret.
func (s *Schema) HasSecrets() bool { return s.b.secrets }

// Conceal returns params (a JSON object, already valid against the schema)
// with every value that a subschema marked secret applies to replaced by
// the commitment object {"$secret": commit(value)}, where value is the
// canonical JSON of the whole value (a string, or an object or list marked
// as a whole). The walk follows properties, patternProperties (by
// matching), additionalProperties (for the other keys), items and
// prefixItems, $ref, and every branch of allOf, anyOf, oneOf and
// if/then/else: a mark in a branch that may not apply still conceals, as a
// secret wrongly concealed costs less than one shown. Conceal returns the
// parameters as they came when nothing is secret.
func (s *Schema) Conceal(params []byte, commit func(value []byte) string) ([]byte, error) {
	if !s.b.secrets {
		return params, nil
	}
	v, err := decodeJSON(params)
	if err != nil {
		return nil, err
	}
	v, err = s.b.conceal([]*node{s.b.start}, v, commit)
	if err != nil {
		return nil, err
	}
	return CanonicalJSON(v)
}

// SecretWithin reports whether the schema may mark secret the value of
// the top-level parameter key, or anything inside it: a value computed
// for key (a plan's param_exprs) may then hold a secret, in whole or in
// part. It follows the subschemas Conceal follows, and every one below
// them, whatever the value.
func (s *Schema) SecretWithin(key string) bool {
	if !s.b.secrets {
		return false
	}
	var sub []*node
	for _, n := range s.b.applying([]*node{s.b.start}) {
		c, matched := n.props[key]
		sub = append(sub, c, n.unevaluated)
		for _, p := range n.patterns {
			if p.re == nil || p.re.MatchString(key) {
				sub, matched = append(sub, p.n), true
			}
		}
		if !matched {
			sub = append(sub, n.additional)
		}
	}
	seen := map[*node]bool{}
	var marked func(nodes []*node) bool
	marked = func(nodes []*node) bool {
		for _, n := range s.b.applying(nodes) {
			if seen[n] {
				continue
			}
			seen[n] = true
			below := append([]*node{n.additional, n.unevaluated}, n.prefix...)
			below = append(below, n.eachItem...)
			for _, c := range n.props {
				below = append(below, c)
			}
			for _, p := range n.patterns {
				below = append(below, p.n)
			}
			if n.secret || marked(below) {
				return true
			}
		}
		return false
	}
	return marked(sub)
}

func (b *bounds) conceal(nodes []*node, v any, commit func([]byte) string) (any, error) {
	all := b.applying(nodes)
	for _, n := range all {
		if n.secret {
			c, err := CanonicalJSON(v)
			if err != nil {
				return nil, err
			}
			return map[string]any{SecretField: commit(c)}, nil
		}
	}
	switch x := v.(type) {
	case map[string]any:
		for key, part := range x {
			var sub []*node
			for _, n := range all {
				matched := false
				if c, ok := n.props[key]; ok {
					sub, matched = append(sub, c), true
				}
				for _, p := range n.patterns {
					if p.re == nil || p.re.MatchString(key) {
						sub, matched = append(sub, p.n), true
					}
				}
				if !matched {
					sub = append(sub, n.additional)
				}
				sub = append(sub, n.unevaluated)
			}
			c, err := b.conceal(sub, part, commit)
			if err != nil {
				return nil, err
			}
			x[key] = c
		}
	case []any:
		for i, part := range x {
			var sub []*node
			for _, n := range all {
				if i < len(n.prefix) {
					sub = append(sub, n.prefix[i])
				}
				sub = append(sub, n.eachItem...)
			}
			c, err := b.conceal(sub, part, commit)
			if err != nil {
				return nil, err
			}
			x[i] = c
		}
	}
	return v, nil
}

// applying returns nodes and every node that applies to the same value
// through $ref and the in-place keywords, each once, nil ones left out.
func (b *bounds) applying(nodes []*node) []*node {
	seen := map[*node]bool{}
	var all []*node
	var visit func(n *node)
	visit = func(n *node) {
		if n == nil || seen[n] {
			return
		}
		seen[n] = true
		all = append(all, n)
		if n.ref != "" {
			visit(b.targets[n.ref])
		}
		for _, c := range n.inPlace {
			visit(c)
		}
	}
	for _, n := range nodes {
		visit(n)
	}
	return all
}

// Commitment returns the commitment of a commitment object, and whether v
// is one.
func Commitment(v any) (string, bool) {
	m, ok := v.(map[string]any)
	if !ok || len(m) != 1 {
		return "", false
	}
	c, ok := m[SecretField].(string)
	return c, ok
}

// MaxRevealed bounds the bytes RevealRequest opens for one request, four
// times the largest parameters a proposal may have. A proposer who has
// seen a commitment of its task may quote it many times, inside a value
// that is secret in turn: without a bound each level would multiply the
// body a plane builds in memory.
const MaxRevealed = 1 << 20

// RevealRequest returns canonical request bytes with each commitment
// object that open knows replaced by the value it commits to (canonical
// JSON), commitments inside that value revealed in turn: the body the
// execution plane sends a tool. open answers ok false for a commitment it
// holds no value for, which then stays as it is. Past MaxRevealed opened
// bytes it refuses the request, naming no value.
func RevealRequest(canonical []byte, open func(commitment string) (value []byte, ok bool, err error)) ([]byte, error) {
	v, err := decodeJSON(canonical)
	if err != nil {
		return nil, err
	}
	left := MaxRevealed
	v, err = reveal(v, func(c string) ([]byte, bool, error) {
		value, ok, err := open(c)
		if left -= len(value); ok && err == nil && left < 0 {
			return nil, false, errs.New(errs.TooLarge, "its secret values open to more than %d bytes", MaxRevealed)
		}
		return value, ok, err
	})
	if err != nil {
		return nil, err
	}
	return CanonicalJSON(v)
}

func reveal(v any, open func(string) ([]byte, bool, error)) (any, error) {
	if c, ok := Commitment(v); ok {
		value, ok, err := open(c)
		if err != nil || !ok {
			return v, err
		}
		// The value may hold commitments itself: a compensation's
		// parameters quote the request it undoes, and its tool's schema
		// may mark them secret again. The nesting ends: a value was
		// committed to before any commitment that holds it.
		opened, err := decodeJSON(value)
		if err != nil {
			return nil, err
		}
		return reveal(opened, open)
	}
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			r, err := reveal(e, open)
			if err != nil {
				return nil, err
			}
			x[k] = r
		}
	case []any:
		for i, e := range x {
			r, err := reveal(e, open)
			if err != nil {
				return nil, err
			}
			x[i] = r
		}
	}
	return v, nil
}

// decodeJSON decodes one JSON value, numbers kept as written.
func decodeJSON(b []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, fmt.Errorf("data after the value")
	}
	return v, nil
}
