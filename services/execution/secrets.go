package execution

import (
	"bytes"
	"encoding/json"
	"maps"
	"slices"
	"strings"

	"github.com/steward-run/steward/pkg/action"
	"github.com/steward-run/steward/pkg/errs"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/secret"
)

// reveal returns the body to send for action a: its canonical request with
// each commitment that a seals replaced by the value, opened and checked
// against the commitment (a value that does not commit to it is refused).
// It also returns the clear values, for redact. A compensation carries the
// sealed values of the action it undoes, whose parameters it quotes, so the
// compensating tool receives them in clear too. A commitment a does not
// seal stays as it is.
func (p *Plane) reveal(taskID string, a *stewardv1.Action, body []byte) ([]byte, []string, error) {
	if len(a.SealedSecrets) == 0 {
		return body, nil, nil
	}
	if p.cfg.Secrets == nil {
		return nil, nil, errs.New(errs.FailedPrecondition, "this execution plane has no secret key (--secret-key) to open them with")
	}
	var values []string
	out, err := action.RevealRequest(body, func(c string) ([]byte, bool, error) {
		for _, s := range a.SealedSecrets {
			if s.Commitment != c {
				continue
			}
			v, err := p.cfg.Secrets.Open(taskID, c, s.Sealed)
			if err != nil {
				return nil, false, errs.Wrap(errs.Corrupt, err, "secret %s", c)
			}
			values = append(values, secret.Forms(v)...)
			return v, true, nil
		}
		return nil, false, nil
	})
	if err != nil {
		return nil, nil, err
	}
	return out, values, nil
}

// redactJSON replaces each secret value in a tool's JSON result: a tool
// that echoes its request must not put the value on the log. Strings and
// keys have each form (secret.Forms) replaced; a number, object or list
// that is a secret value as a whole becomes "[secret]". A result that held
// one is kept, re-encoded in canonical form; one that is not JSON has the
// bytes replaced.
func redactJSON(body []byte, values []string) []byte {
	if len(values) == 0 || len(body) == 0 {
		return body
	}
	var v any
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return []byte(secret.Redact(string(body), values))
	}
	whole := map[string]bool{}
	composite := false // whether any value is an object or a list
	for _, f := range values {
		whole[f] = true
		composite = composite || strings.HasPrefix(f, "{") || strings.HasPrefix(f, "[")
	}
	changed := false
	var walk func(any) any
	walk = func(v any) any {
		switch x := v.(type) {
		case string:
			if r := secret.Redact(x, values); r != x {
				changed = true
				return r
			}
		case json.Number:
			if whole[x.String()] {
				changed = true
				return "[secret]"
			}
		case map[string]any:
			if composite && isValue(x, whole) {
				changed = true
				return "[secret]"
			}
			for _, k := range slices.Sorted(maps.Keys(x)) {
				e := walk(x[k])
				if r := secret.Redact(k, values); r != k {
					delete(x, k)
					k, changed = r, true
				}
				x[k] = e
			}
		case []any:
			if composite && isValue(x, whole) {
				changed = true
				return "[secret]"
			}
			for i, e := range x {
				x[i] = walk(e)
			}
		}
		return v
	}
	v = walk(v)
	if !changed {
		return body
	}
	out, err := action.CanonicalJSON(v)
	if err != nil {
		return []byte(`"[secret]"`)
	}
	return out
}

// isValue reports whether v, in canonical form, is one of the secret
// values whole holds.
func isValue(v any, whole map[string]bool) bool {
	c, err := action.CanonicalJSON(v)
	return err == nil && whole[string(c)]
}

// secretForms returns the ways the values a seals may be quoted (for
// redaction); a value that does not open is left out, as it was never
// sent.
func (p *Plane) secretForms(taskID string, a *stewardv1.Action) []string {
	if len(a.SealedSecrets) == 0 || p.cfg.Secrets == nil {
		return nil
	}
	var forms []string
	for _, s := range a.SealedSecrets {
		if v, err := p.cfg.Secrets.Open(taskID, s.Commitment, s.Sealed); err == nil {
			forms = append(forms, secret.Forms(v)...)
		}
	}
	return forms
}
