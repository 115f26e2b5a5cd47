package policy

import (
	"encoding/json"
	"fmt"
	"slices"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/rego"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// Decision values, as the policy spells them.
const (
	// Allow lets the action run without a person.
	Allow = "allow"
	// Deny stops the action, whoever would approve it.
	Deny = "deny"
	// RequireApproval lets the action run once a person in one of the
	// RequiredApproverRoles approves it.
	RequireApproval = "require_approval"
)

// Result is the outcome of one evaluation: what a PolicySnapshot records.
type Result struct {
	// Decision is Allow, Deny or RequireApproval.
	Decision string
	// RiskTier is a RiskTier enum name such as "RISK_TIER_HIGH", or "" if
	// the policy did not say.
	RiskTier string
	// RequiredApproverRoles names who may approve when Decision is
	// RequireApproval.
	RequiredApproverRoles []string
	// RequiredApprovals is how many distinct principals holding those
	// roles must approve, at most MaxRequiredApprovals; zero means one.
	RequiredApprovals uint32
	// Reasons explain the decision to people.
	Reasons []string
	// Revision is the revision of the bundle that decided, "sha256:<hex>".
	Revision string
	// Sources are that bundle's files and OPA version, shared and not to
	// be changed: what governance keeps for auditors.
	Sources *stewardv1.PolicySources
}

// MaxRequiredApprovals caps how many distinct approvers a policy may ask
// for: a larger number is a mistake in the bundle (an approval nobody could
// ever complete), and is read as a deny that says so.
const MaxRequiredApprovals = 5

// denyResult is the fail-closed answer for a policy that did not decide.
func denyResult(revision, reason string) Result {
	return Result{Decision: Deny, Reasons: []string{reason}, Revision: revision}
}

// asIs hands OPA's value of a result to decide as it is, for
// decisionOf, rather than converted to Go's values.
func asIs(t *ast.Term, _ *rego.EvalContext) (any, error) { return t.Value, nil }

// decisionOf is decodeDecision of v, OPA's value of query's result:
// read as it is when it is well formed, of the shapes a decision has
// (readDecision); otherwise converted as OPA converts a result, and
// decoded from that, so that a malformed one is denied with the reason
// it always was, and one OPA cannot convert fails the evaluation as it
// did.
func decisionOf(v any, revision, query string) (Result, error) {
	value, ok := v.(ast.Value)
	if !ok {
		return decodeDecision(v, revision, query), nil
	}
	if r, ok := readDecision(value, revision); ok {
		return r, nil
	}
	doc, err := ast.JSONWithOpt(value, ast.JSONOpt{}) // rego's own conversion, sets unsorted
	if err != nil {
		return Result{}, err
	}
	return decodeDecision(doc, revision, query), nil
}

// readDecision reads v as decodeDecision reads it converted, when v is
// an object whose decision is one of the three, whose risk_tier, if
// any, is a string, whose lists are arrays of strings (or null) and
// whose required_approvals is null or a number it accepts; ok is false
// for anything else, left to decodeDecision.
func readDecision(v ast.Value, revision string) (r Result, ok bool) {
	obj, ok := v.(ast.Object)
	if !ok {
		return Result{}, false
	}
	k := decisionKeys
	decision, ok := valueAt(obj, k.decision).(ast.String)
	if !ok || !slices.Contains([]string{Allow, Deny, RequireApproval}, string(decision)) {
		return Result{}, false
	}
	r = Result{Decision: string(decision), Revision: revision}
	if t := valueAt(obj, k.riskTier); t != nil {
		tier, ok := t.(ast.String)
		if !ok {
			return Result{}, false
		}
		r.RiskTier = string(tier)
	}
	var rolesOK, reasonsOK bool
	r.RequiredApproverRoles, rolesOK = readStrings(valueAt(obj, k.roles))
	r.Reasons, reasonsOK = readStrings(valueAt(obj, k.reasons))
	if !rolesOK || !reasonsOK {
		return Result{}, false
	}
	switch n := valueAt(obj, k.approvals).(type) {
	case nil, ast.Null:
	case ast.Number:
		var err error
		if r.RequiredApprovals, err = approvalCount(json.Number(n)); err != nil {
			return Result{}, false
		}
	default:
		return Result{}, false
	}
	return r, true
}

// decisionKeys are the members of a decision readDecision reads, as
// OPA's terms made once. Read-only.
var decisionKeys = struct{ decision, riskTier, roles, reasons, approvals *ast.Term }{
	ast.StringTerm("decision"), ast.StringTerm("risk_tier"), ast.StringTerm("required_approver_roles"),
	ast.StringTerm("reasons"), ast.StringTerm("required_approvals"),
}

// valueAt is obj's member key, nil when it has none.
func valueAt(obj ast.Object, key *ast.Term) ast.Value {
	if t := obj.Get(key); t != nil {
		return t.Value
	}
	return nil
}

// readStrings reads v, a member of a decision, as stringList reads it
// converted: absent or null is nil; an array of strings its strings.
func readStrings(v ast.Value) ([]string, bool) {
	switch x := v.(type) {
	case nil, ast.Null:
		return nil, true
	case *ast.Array:
		out := make([]string, 0, x.Len())
		for i := range x.Len() {
			s, ok := x.Elem(i).Value.(ast.String)
			if !ok {
				return nil, false
			}
			out = append(out, string(s))
		}
		return out, true
	}
	return nil, false
}

// decodeDecision turns the value of query (data.steward.policy.decision
// or the plan's) into a Result. Anything malformed is a deny that says
// what was wrong, because a policy that cannot be read has not allowed
// anything.
func decodeDecision(value any, revision, query string) Result {
	obj, ok := value.(map[string]any)
	if !ok {
		return denyResult(revision, fmt.Sprintf("policy gave no decision: %s is %T, not an object", query, value))
	}
	decision, _ := obj["decision"].(string)
	if !slices.Contains([]string{Allow, Deny, RequireApproval}, decision) {
		return denyResult(revision, fmt.Sprintf("policy gave no decision: decision is %#v, not one of allow, deny, require_approval", obj["decision"]))
	}
	r := Result{Decision: decision, Revision: revision}
	if v, ok := obj["risk_tier"]; ok {
		if r.RiskTier, ok = v.(string); !ok {
			return denyResult(revision, fmt.Sprintf("policy gave a malformed decision: risk_tier is %T, not a string", v))
		}
	}
	var err error
	if r.RequiredApproverRoles, err = stringList(obj, "required_approver_roles"); err != nil {
		return denyResult(revision, "policy gave a malformed decision: "+err.Error())
	}
	if r.Reasons, err = stringList(obj, "reasons"); err != nil {
		return denyResult(revision, "policy gave a malformed decision: "+err.Error())
	}
	if r.RequiredApprovals, err = approvalCount(obj["required_approvals"]); err != nil {
		return denyResult(revision, "policy gave a malformed decision: "+err.Error())
	}
	return r
}

// approvalCount reads required_approvals: absent or null is zero (one
// approver), otherwise a whole number from 0 to MaxRequiredApprovals.
func approvalCount(v any) (uint32, error) {
	var n float64
	switch x := v.(type) {
	case nil:
		return 0, nil
	case json.Number:
		f, err := x.Float64()
		if err != nil {
			return 0, fmt.Errorf("required_approvals is %s, not a number", x)
		}
		n = f
	case float64:
		n = x
	case int:
		n = float64(x)
	case int64:
		n = float64(x)
	default:
		return 0, fmt.Errorf("required_approvals is %T, not a number", v)
	}
	if n != float64(int64(n)) || n < 0 || n > MaxRequiredApprovals {
		return 0, fmt.Errorf("required_approvals is %v, not a whole number from 0 to %d", v, MaxRequiredApprovals)
	}
	return uint32(n), nil
}

// stringList reads obj[key] as a list of strings; a missing key is nil.
func stringList(obj map[string]any, key string) ([]string, error) {
	v, ok := obj[key]
	if !ok || v == nil {
		return nil, nil
	}
	list, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("%s is %T, not a list", key, v)
	}
	out := make([]string, 0, len(list))
	for i, item := range list {
		s, ok := item.(string)
		if !ok {
			return nil, fmt.Errorf("%s[%d] is %T, not a string", key, i, item)
		}
		out = append(out, s)
	}
	return out, nil
}
