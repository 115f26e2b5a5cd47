// Package action turns a proposed tool call into an immutable canonical
// request and the stable identities derived from it, and validates
// parameters against a tool's JSON Schema. Every plane that recomputes a
// hash — the control plane on proposal, the execution plane before every
// dispatch — uses this code, so they agree byte for byte.
//
// Canonical request: the JSON object
//
//	{"params":{…},"target":"…","task_id":"…","tool":"…","tool_version":"…"}
//
// with object keys sorted by their UTF-8 bytes at every depth, no
// insignificant whitespace, strings escaped as encoding/json does without
// HTML escaping, and numbers in the shortest form that round-trips an
// IEEE-754 double (parameters arrive as google.protobuf.Struct, whose
// numbers are doubles). Identities, all hex SHA-256:
//
//	request_hash = H(canonical request)
//	action_id    = "act-" + first 32 hex of H(task_id, proposal_id)   (random without a proposal id)
//	action_hash  = H("steward.action.v1", action_id, request_hash)    what an approval binds to
//	op_key       = H("steward.op.v1", task_id, action_id)             the tool's idempotency key
//
// (H over several parts hashes them joined by NUL bytes.) The functions
// here are pure and safe for concurrent use.
package action

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Request is a proposed tool call before canonicalisation.
type Request struct {
	TaskID      string
	Tool        string
	ToolVersion string
	Target      string
	// Params is a JSON object; nil means {}.
	Params json.RawMessage
}

// Canonical returns the canonical bytes of r.
func Canonical(r Request) ([]byte, error) {
	params := any(map[string]any{})
	if len(r.Params) > 0 {
		dec := json.NewDecoder(bytes.NewReader(r.Params))
		dec.UseNumber()
		if err := dec.Decode(&params); err != nil {
			return nil, fmt.Errorf("params: %w", err)
		}
		if _, ok := params.(map[string]any); !ok {
			return nil, fmt.Errorf("params: want a JSON object")
		}
		if dec.More() {
			return nil, fmt.Errorf("params: data after the object")
		}
	}
	return CanonicalJSON(map[string]any{
		"params":       params,
		"target":       r.Target,
		"task_id":      r.TaskID,
		"tool":         r.Tool,
		"tool_version": r.ToolVersion,
	})
}

// CanonicalJSON encodes v (values as decoded by encoding/json, with or
// without UseNumber) in the canonical form described in the package doc.
func CanonicalJSON(v any) ([]byte, error) {
	var b bytes.Buffer
	if err := encode(&b, v); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// WriteCanonicalJSON is CanonicalJSON writing to b, for a document put
// together from parts: on an error, b holds part of v.
func WriteCanonicalJSON(b *bytes.Buffer, v any) error { return encode(b, v) }

// WriteCanonicalString writes s as CanonicalJSON writes a string, for a
// caller walking values of its own that are not in an any.
func WriteCanonicalString(b *bytes.Buffer, s string) { encodeString(b, s) }

// WriteCanonicalNumber writes n as CanonicalJSON writes a json.Number,
// or fails as it does.
func WriteCanonicalNumber(b *bytes.Buffer, n json.Number) error {
	f, err := strconv.ParseFloat(string(n), 64)
	if err != nil {
		return fmt.Errorf("number %s: %w", n, err)
	}
	return encodeFloat(b, f)
}

func encode(b *bytes.Buffer, v any) error {
	switch x := v.(type) {
	case nil:
		b.WriteString("null")
	case bool:
		b.WriteString(strconv.FormatBool(x))
	case string:
		encodeString(b, x)
	case json.Number:
		return WriteCanonicalNumber(b, x)
	case float64:
		return encodeFloat(b, x)
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		b.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				b.WriteByte(',')
			}
			encodeString(b, k)
			b.WriteByte(':')
			if err := encode(b, x[k]); err != nil {
				return err
			}
		}
		b.WriteByte('}')
	case []any:
		b.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				b.WriteByte(',')
			}
			if err := encode(b, e); err != nil {
				return err
			}
		}
		b.WriteByte(']')
	default:
		return fmt.Errorf("cannot canonicalise %T", v)
	}
	return nil
}

func encodeFloat(b *bytes.Buffer, f float64) error {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return fmt.Errorf("number %v has no JSON form", f)
	}
	if f == math.Trunc(f) && math.Abs(f) < 1e21 {
		b.WriteString(strconv.FormatFloat(f, 'f', -1, 64)) // integers without exponent
		return nil
	}
	b.WriteString(strconv.FormatFloat(f, 'g', -1, 64))
	return nil
}

func encodeString(b *bytes.Buffer, s string) {
	if !needsEscape(s) {
		// Most strings: encoding/json would write them as they are, so
		// skip its encoder and the copies it makes.
		b.WriteByte('"')
		b.WriteString(s)
		b.WriteByte('"')
		return
	}
	var sb strings.Builder
	enc := json.NewEncoder(&sb)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	b.WriteString(strings.TrimSuffix(sb.String(), "\n"))
}

// needsEscape reports whether encoding/json, without HTML escaping, would
// write s other than verbatim between quotes: for a control character, a
// quote or backslash, U+2028 or U+2029, or a byte that is not UTF-8.
func needsEscape(s string) bool {
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c < 0x20 || c == '"' || c == '\\' {
				return true
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 || r == '\u2028' || r == '\u2029' {
			return true
		}
		i += size
	}
	return false
}

// hash is hex SHA-256 of parts joined by NUL bytes.
func hash(parts ...string) string {
	sum := sha256.Sum256([]byte(strings.Join(parts, "\x00")))
	return hex.EncodeToString(sum[:])
}

// RequestHash returns the hash of canonical request bytes.
func RequestHash(canonical []byte) string {
	sum := sha256.Sum256(canonical)
	return hex.EncodeToString(sum[:])
}

// ID returns the action id for a proposal: deterministic from the task and
// the client's proposal id, so the same proposal twice is the same action.
func ID(taskID, proposalID string) string {
	return "act-" + hash(taskID, proposalID)[:32]
}

// Hash returns the action hash that approvals bind to.
func Hash(actionID, requestHash string) string {
	return hash("steward.action.v1", actionID, requestHash)
}

// OpKey returns the idempotency key the tool sees for an action.
func OpKey(taskID, actionID string) string {
	return hash("steward.op.v1", taskID, actionID)
}

// AmendmentPrefix starts the proposal id of every action Steward proposes
// for an approver's amendment; clients may not use it.
const AmendmentPrefix = "amend-"

// AmendmentID returns the proposal id of the action an approver's
// amendment of approval approvalID proposes, params being the amended
// parameters as canonical JSON: deterministic from both, so a retried
// decision, or a redelivered one, proposes one action.
func AmendmentID(approvalID string, canonicalParams []byte) string {
	return AmendmentPrefix + approvalID + "-" + RequestHash(canonicalParams)[:32]
}
