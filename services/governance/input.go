package governance

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"unicode/utf8"

	"github.com/steward-run/steward/pkg/action"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/policystore"
	"github.com/steward-run/steward/pkg/task"
)

// policyInput builds the input document for one evaluation of a, an
// action of t, whose facts are facts, and its canonical form, whose hash
// the snapshot records (inputRecord). Every value in it is one OPA takes
// as it is (map[string]any, []any, string, bool, json.Number, nil, and
// the Parts of task and tool, shared by every evaluation of the task and
// the tool, which no one writes to).
func policyInput(facts taskFacts, t *stewardv1.Task, tool toolFacts, a *stewardv1.Action, request []byte) (map[string]any, inputRecord, error) {
	params, err := requestParams(request)
	if err != nil {
		return nil, inputRecord{}, err
	}
	actionFacts := map[string]any{
		"action_id":    a.ActionId,
		"tool":         a.Tool,
		"tool_version": a.ToolVersion,
		"target":       a.Target,
		"params":       params,
		"effect_class": a.EffectClass.String(),
		"proposed_by":  a.ProposedBy,
		"edit_of":      a.EditOf,
		"amendment_of": a.AmendmentOf,
		"compensates":  a.Compensates,
	}
	// The proposer's case, every field present (empty when not given), so
	// that policy may require it (the default bundle does for high risk).
	rationale, err := protoFacts(rationaleOf(a).ProtoReflect())
	if err != nil {
		return nil, inputRecord{}, err
	}
	actionFacts["rationale"] = rationale
	credential := credentialFacts(t)
	risk := map[string]any{"contract_risk_tier": t.Contract.GetRiskTier().String()}
	input := map[string]any{
		"task":       facts.value,
		"tool":       tool.value,
		"action":     actionFacts,
		"credential": credential,
		"risk":       risk,
	}
	members := []member{
		{key: "action", value: hashedStrings(actionFacts)},
		{key: "credential", value: hashedStrings(credential)},
	}
	// The decision behind the action, when the proposer named one; an
	// action without one hashes as it always has.
	if d := task.FindDecision(t, a.DecisionId); a.DecisionId != "" && d != nil {
		decision := decisionFacts(t, d)
		input["decision"] = decision
		members = append(members, member{key: "decision", value: decision})
	}
	rec, err := canonicalInput(append(members,
		member{key: "risk", value: risk},
		member{key: "task", canonical: facts.canonical},
		member{key: "tool", canonical: tool.canonical},
	))
	if err != nil {
		return nil, inputRecord{}, err
	}
	return input, rec, nil
}

// rationaleOf is a's rationale, or an empty one.
func rationaleOf(a *stewardv1.Action) *stewardv1.ActionRationale {
	if a.Rationale != nil {
		return a.Rationale
	}
	return &stewardv1.ActionRationale{}
}

// member is one member of the input document, for its hash: its value,
// or the value's canonical form when that is known.
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
// in key order: the bytes action.CanonicalJSON writes for the whole
// document, put together a member at a time so that the task's and the
// tool's come from their caches.
func canonicalInput(members []member) (inputRecord, error) {
	var b bytes.Buffer
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
		if m.canonical != nil {
			b.Write(m.canonical)
		} else if err := action.WriteCanonicalJSON(&b, m.value); err != nil {
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

// credentialFacts is what policy sees of the task's credential: its bounds,
// and whether it was delegated. Governance has checked it before policy
// runs (credentialRefusal); policy may ask for more, such as an approval
// for any delegated task.
func credentialFacts(t *stewardv1.Task) map[string]any {
	c := t.Credential.GetCredential()
	facts := map[string]any{
		"credential_ref": c.GetCredentialId(),
		"principal":      c.GetPrincipal(),
		"allowed_tools":  stringList(c.GetAllowedTools()),
		"scopes":         stringList(c.GetScopes()),
		"delegated":      c.GetParentCredentialId() != "",
		"depth":          json.Number(strconv.Itoa(len(t.Credential.GetChain()))),
	}
	if c.GetCredentialId() == "" {
		facts["credential_ref"] = t.Contract.GetCredentialRef()
	}
	return facts
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
