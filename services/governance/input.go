package governance

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"unicode/utf8"

	"github.com/open-policy-agent/opa/v1/ast"

	"github.com/steward-run/steward/pkg/action"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/policystore"
	"github.com/steward-run/steward/pkg/task"
)

// policyInput builds the input document for one evaluation of a, an
// action of t, whose facts are facts, as OPA's value, and its canonical
// form, written into b, whose hash the snapshot records (inputRecord):
// the record holds b's bytes until b is used again. The members made per
// action (action, credential, risk, decision) are built as OPA's values
// directly (inputvalue.go) and their canonical form written from those
// values; the task's and the tool's are the Parts and canonical forms
// made once for every evaluation of the task and the tool, which no one
// writes to.
func (in *actionInputs) policyInput(facts taskFacts, t *stewardv1.Task, tool toolFacts, a *stewardv1.Action, request []byte, b *bytes.Buffer) (ast.Value, inputRecord, error) {
	params, err := requestParams(request)
	if err != nil {
		return nil, inputRecord{}, err
	}
	paramsValue, err := ast.InterfaceToValue(params)
	if err != nil {
		return nil, inputRecord{}, err
	}
	// The proposer's case, every field present (empty when not given), so
	// that policy may require it (the default bundle does for high risk).
	rationale, err := in.rationale(a)
	if err != nil {
		return nil, inputRecord{}, err
	}
	k := inputKeys
	v := new([4]ast.Term) // the values of the members made here
	v[0].Value = actionValue(a, paramsValue, rationale)
	v[1].Value = credentialValue(t)
	v[2].Value = ast.NewObject(ast.Item(k.contractRiskTier, ast.InternedTerm(t.Contract.GetRiskTier().String())))
	kvs := make([][2]*ast.Term, 0, 6)
	kvs = append(kvs, ast.Item(k.action, &v[0]), ast.Item(k.credential, &v[1]))
	members := make([]member, 0, 6)
	members = append(members, member{key: "action", value: v[0].Value}, member{key: "credential", value: v[1].Value})
	// The decision behind the action, when the proposer named one; an
	// action without one hashes as it always has.
	if d := task.FindDecision(t, a.DecisionId); a.DecisionId != "" && d != nil {
		if v[3].Value, err = ast.InterfaceToValue(decisionFacts(t, d)); err != nil {
			return nil, inputRecord{}, err
		}
		kvs = append(kvs, ast.Item(k.decision, &v[3]))
		members = append(members, member{key: "decision", value: v[3].Value})
	}
	kvs = append(kvs, ast.Item(k.risk, &v[2]), ast.Item(k.task, facts.value.Term()), ast.Item(k.tool, tool.value.Term()))
	rec, err := canonicalInput(b, append(members,
		member{key: "risk", value: v[2].Value},
		member{key: "task", canonical: facts.canonical},
		member{key: "tool", canonical: tool.canonical},
	))
	if err != nil {
		return nil, inputRecord{}, err
	}
	return ast.NewObject(kvs...), rec, nil
}

// member is one member of the input document, for its hash: its value
// (JSON's types, or OPA's value of them), or the value's canonical form
// when that is known.
type member struct {
	key       string
	value     any
	canonical []byte
}

// inputRecord is an input document as governance keeps it for auditors:
// its canonical form, and that form's hex SHA-256, the snapshot's
// input_hash and the key it is kept under (policystore).
type inputRecord struct {
	canonical []byte
	hash      string
}

// canonicalInput is the canonical form of the document of members, given
// in key order, written into b: the bytes action.CanonicalJSON writes for
// the whole document, put together a member at a time so that the
// task's and the tool's come from their caches.
func canonicalInput(b *bytes.Buffer, members []member) (inputRecord, error) {
	b.Reset()
	size := 1024 // room for the members built per action
	for _, m := range members {
		size += len(m.key) + 3 + len(m.canonical)
	}
	b.Grow(size)
	for i, m := range members {
		sep := ","
		if i == 0 {
			sep = "{"
		}
		b.WriteString(sep)
		b.Write(strconv.AppendQuote(b.AvailableBuffer(), m.key))
		b.WriteByte(':')
		var err error
		switch v := m.value.(type) {
		case ast.Value:
			err = writeCanonical(b, v)
		default:
			if m.canonical != nil {
				b.Write(m.canonical)
			} else {
				err = action.WriteCanonicalJSON(b, v)
			}
		}
		if err != nil {
			return inputRecord{}, err
		}
	}
	b.WriteString("}")
	return inputRecord{canonical: b.Bytes(), hash: policystore.InputHash(b.Bytes())}, nil
}

// requestParams is the params object of a canonical request, numbers as
// OPA takes them; null if the request has none.
func requestParams(request []byte) (any, error) {
	var req struct {
		Params map[string]any `json:"params"`
	}
	if err := json.Unmarshal(request, &req); err != nil {
		return nil, fmt.Errorf("canonical request: %w", err)
	}
	if req.Params == nil {
		return nil, nil
	}
	return numbersForPolicy(req.Params), nil
}

// credentialFacts is what policy sees of the task's credential
// (credentialValue), as JSON's types, for the plan query's input.
func credentialFacts(t *stewardv1.Task) map[string]any {
	// Strings, lists of them, a bool and a number: always converted.
	doc, _ := ast.JSON(credentialValue(t))
	return doc.(map[string]any)
}

// stringList is list as OPA makes a []string its own: through JSON, which
// turns each invalid UTF-8 byte into U+FFFD.
func stringList(list []string) []any {
	out := make([]any, len(list))
	for i, s := range list {
		out[i] = validUTF8(s)
	}
	return out
}

// hashedStrings is m with its strings as JSON would carry them
// (validUTF8): the input hash has always been taken over the document
// after a trip through JSON. Strings from decoded protos are valid, so
// this copies nothing in practice.
func hashedStrings(m map[string]any) map[string]any {
	var out map[string]any
	for k, v := range m {
		if s, ok := v.(string); ok && !utf8.ValidString(s) {
			if out == nil {
				out = make(map[string]any, len(m))
				for k, v := range m {
					out[k] = v
				}
			}
			out[k] = validUTF8(s)
		}
	}
	if out == nil {
		return m
	}
	return out
}

// validUTF8 replaces each byte of s that is not UTF-8 with U+FFFD, as
// encoding/json does.
func validUTF8(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	return string([]rune(s))
}
