package governance

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"sync"

	"github.com/open-policy-agent/opa/v1/ast"
	"google.golang.org/protobuf/proto"

	"github.com/steward-run/steward/pkg/action"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/services/governance/policy"
)

// The members of a policy input made for each action are built as OPA's
// values, and their canonical form is written from those values: one
// tree per action, rather than Go maps that OPA then copies into its own
// values (which cost as much as the evaluation under a small bundle).

// actionInputs makes the members of policy inputs built per action
// (policyInput), and lends the buffers their canonical forms are written
// into. Its zero value is ready for use; it is safe for concurrent use.
type actionInputs struct {
	bufs sync.Pool // *bytes.Buffer

	// noRationale is input.action.rationale of an action proposed
	// without one, most of them: made once, a Part since every such
	// input shares it.
	noRationaleOnce sync.Once
	noRationale     policy.Part
	noRationaleErr  error
}

// maxKeptBuffer bounds the buffers kept for reuse: an input whose params
// are near their limit (256 KiB) leaves its buffer to the collector.
const maxKeptBuffer = 64 << 10

// buffer lends a buffer for an input's canonical form; release gives it
// back once nothing holds its bytes.
func (in *actionInputs) buffer() *bytes.Buffer {
	if b, ok := in.bufs.Get().(*bytes.Buffer); ok {
		return b
	}
	return new(bytes.Buffer)
}

func (in *actionInputs) release(b *bytes.Buffer) {
	if b.Cap() <= maxKeptBuffer {
		b.Reset()
		in.bufs.Put(b)
	}
}

// rationale is input.action.rationale for a: the proposer's case, every
// field present (empty when not given), so that policy may require it
// (the default bundle does for high risk).
func (in *actionInputs) rationale(a *stewardv1.Action) (*ast.Term, error) {
	if proto.Size(a.Rationale) == 0 { // nil, or nothing set
		in.noRationaleOnce.Do(func() {
			facts, err := protoFacts((&stewardv1.ActionRationale{}).ProtoReflect())
			if err == nil {
				in.noRationale, err = policy.NewPart(facts)
			}
			in.noRationaleErr = err
		})
		return in.noRationale.Term(), in.noRationaleErr
	}
	facts, err := protoFacts(a.Rationale.ProtoReflect())
	if err != nil {
		return nil, err
	}
	v, err := ast.InterfaceToValue(facts)
	if err != nil {
		return nil, err
	}
	return ast.NewTerm(v), nil
}

// inputKeys are the keys of the members built per action, as OPA's terms,
// made once: given a string, OPA makes a term of it every time. Read-only,
// and shared as OPA's own interned terms are.
var inputKeys = struct {
	action, credential, decision, risk, task, tool                                                *ast.Term
	actionID, toolName, toolVersion, target, params, effectClass, proposedBy, editOf, amendmentOf *ast.Term
	compensates, rationale, credentialRef, principal, allowedTools, scopes, delegated, depth      *ast.Term
	contractRiskTier                                                                              *ast.Term
}{
	action: ast.StringTerm("action"), credential: ast.StringTerm("credential"), decision: ast.StringTerm("decision"),
	risk: ast.StringTerm("risk"), task: ast.StringTerm("task"), tool: ast.StringTerm("tool"),
	actionID: ast.StringTerm("action_id"), toolName: ast.StringTerm("tool"), toolVersion: ast.StringTerm("tool_version"),
	target: ast.StringTerm("target"), params: ast.StringTerm("params"), effectClass: ast.StringTerm("effect_class"),
	proposedBy: ast.StringTerm("proposed_by"), editOf: ast.StringTerm("edit_of"), amendmentOf: ast.StringTerm("amendment_of"),
	compensates: ast.StringTerm("compensates"), rationale: ast.StringTerm("rationale"),
	credentialRef: ast.StringTerm("credential_ref"), principal: ast.StringTerm("principal"),
	allowedTools: ast.StringTerm("allowed_tools"), scopes: ast.StringTerm("scopes"),
	delegated: ast.StringTerm("delegated"), depth: ast.StringTerm("depth"),
	contractRiskTier: ast.StringTerm("contract_risk_tier"),
}

// actionValue is input.action: what was proposed, with its params and
// rationale as given. Its strings are as the action holds them (the hash
// takes them as JSON carries them: writeCanonical).
func actionValue(a *stewardv1.Action, params ast.Value, rationale *ast.Term) ast.Object {
	k := inputKeys
	v := new([10]ast.Term)
	return ast.NewObject(
		item(k.actionID, &v[0], ast.InternedValue(a.ActionId)),
		item(k.toolName, &v[1], ast.InternedValue(a.Tool)),
		item(k.toolVersion, &v[2], ast.InternedValue(a.ToolVersion)),
		item(k.target, &v[3], ast.InternedValue(a.Target)),
		item(k.params, &v[4], params),
		item(k.effectClass, &v[5], ast.InternedValue(a.EffectClass.String())),
		item(k.proposedBy, &v[6], ast.InternedValue(a.ProposedBy)),
		item(k.editOf, &v[7], ast.InternedValue(a.EditOf)),
		item(k.amendmentOf, &v[8], ast.InternedValue(a.AmendmentOf)),
		item(k.compensates, &v[9], ast.InternedValue(a.Compensates)),
		ast.Item(k.rationale, rationale),
	)
}

// credentialValue is input.credential, what policy sees of the task's
// credential: its bounds, and whether it was delegated. Governance has
// checked it before policy runs (credentialRefusal); policy may ask for
// more, such as an approval for any delegated task.
func credentialValue(t *stewardv1.Task) ast.Object {
	c := t.Credential.GetCredential()
	ref := c.GetCredentialId()
	if ref == "" {
		ref = t.Contract.GetCredentialRef()
	}
	k := inputKeys
	v := new([6]ast.Term)
	return ast.NewObject(
		item(k.credentialRef, &v[0], ast.InternedValue(ref)),
		item(k.principal, &v[1], ast.InternedValue(c.GetPrincipal())),
		item(k.allowedTools, &v[2], stringsValue(c.GetAllowedTools())),
		item(k.scopes, &v[3], stringsValue(c.GetScopes())),
		item(k.delegated, &v[4], ast.InternedValue(c.GetParentCredentialId() != "")),
		item(k.depth, &v[5], ast.Number(strconv.Itoa(len(t.Credential.GetChain())))),
	)
}

// item is the member key: value, value held in t.
func item(key, t *ast.Term, value ast.Value) [2]*ast.Term {
	t.Value = value
	return [2]*ast.Term{key, t}
}

// stringsValue is list as OPA makes a []string its own: through JSON,
// which turns each invalid UTF-8 byte into U+FFFD.
func stringsValue(list []string) *ast.Array {
	terms := make([]ast.Term, len(list))
	elems := make([]*ast.Term, len(list))
	for i, s := range list {
		terms[i].Value = ast.InternedValue(validUTF8(s))
		elems[i] = &terms[i]
	}
	return ast.NewArray(elems...)
}

// writeCanonical writes v, a value of JSON's types, as
// action.CanonicalJSON writes the document it stands for, with each
// string as JSON carries it (validUTF8): the input hash has always been
// taken over the document after a trip through JSON.
func writeCanonical(b *bytes.Buffer, v ast.Value) error {
	switch x := v.(type) {
	case ast.Null:
		b.WriteString("null")
	case ast.Boolean:
		b.WriteString(strconv.FormatBool(bool(x)))
	case ast.String:
		action.WriteCanonicalString(b, validUTF8(string(x)))
	case ast.Number:
		return action.WriteCanonicalNumber(b, json.Number(x))
	case *ast.Array:
		b.WriteByte('[')
		for i := range x.Len() {
			if i > 0 {
				b.WriteByte(',')
			}
			if err := writeCanonical(b, x.Elem(i).Value); err != nil {
				return err
			}
		}
		b.WriteByte(']')
	case ast.Object:
		return writeCanonicalObject(b, x)
	default:
		return fmt.Errorf("cannot canonicalise %T", v)
	}
	return nil
}

// writeCanonicalObject writes obj with its keys in order: OPA orders
// string keys by their bytes, as CanonicalJSON does.
func writeCanonicalObject(b *bytes.Buffer, obj ast.Object) error {
	b.WriteByte('{')
	first := true
	err := obj.Iter(func(k, v *ast.Term) error {
		key, ok := k.Value.(ast.String)
		if !ok {
			return fmt.Errorf("cannot canonicalise an object key %v", k)
		}
		if !first {
			b.WriteByte(',')
		}
		first = false
		action.WriteCanonicalString(b, string(key))
		b.WriteByte(':')
		return writeCanonical(b, v.Value)
	})
	b.WriteByte('}')
	return err
}
