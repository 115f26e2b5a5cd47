package policy

import (
	"fmt"
	"testing"

	"github.com/open-policy-agent/opa/v1/ast"
)

// TestDecisionOfReadsAsTheConvertedValue: a decision read as OPA's value
// is the Result decoded from it converted as OPA converts a result, for
// decisions well formed and not (sets, nulls, other types, numbers out of
// range), which readDecision leaves to the converted route.
func TestDecisionOfReadsAsTheConvertedValue(t *testing.T) {
	decisions := []string{
		`{"decision": "allow", "reasons": ["benchmark: allow all"]}`,
		`{"decision": "require_approval", "risk_tier": "RISK_TIER_HIGH", "required_approver_roles": ["authorizer", "sre"], "required_approvals": 2, "reasons": ["b", "a"]}`,
		`{"decision": "deny", "risk_tier": "RISK_TIER_LOW", "required_approver_roles": [], "required_approvals": 0, "reasons": [], "extra": {"x": 1}}`,
		`{"decision": "deny", "required_approver_roles": null, "required_approvals": null, "reasons": null}`,
		`{"decision": "allow", "required_approvals": 1.0}`,
		`{"decision": "allow", "reasons": {"b", "a", "c"}}`,
		`{"decision": "require_approval", "required_approver_roles": {"x"}}`,
		`{"decision": "allow", "reasons": ["a", 1]}`,
		`{"decision": "allow", "reasons": "a"}`,
		`{"decision": "allow", "risk_tier": null}`,
		`{"decision": "allow", "risk_tier": 3}`,
		`{"decision": "allow", "required_approvals": 1.5}`,
		`{"decision": "allow", "required_approvals": 6}`,
		`{"decision": "allow", "required_approvals": -1}`,
		`{"decision": "allow", "required_approvals": "2"}`,
		`{"decision": "maybe"}`,
		`{"decision": 1}`,
		`{"reasons": ["no decision"]}`,
		`{}`,
		`"allow"`,
		`["allow"]`,
		`{"allow"}`,
		`null`,
		`{1: "allow"}`,
	}
	for _, d := range decisions {
		v, err := ast.ParseTerm(d)
		if err != nil {
			t.Fatalf("%s: %v", d, err)
		}
		got, gotErr := decisionOf(v.Value, "rev", decisionQuery)
		var want Result
		doc, wantErr := ast.JSONWithOpt(v.Value, ast.JSONOpt{})
		if wantErr == nil {
			want = decodeDecision(doc, "rev", decisionQuery)
		}
		if (gotErr != nil) != (wantErr != nil) || fmt.Sprintf("%#v", got) != fmt.Sprintf("%#v", want) {
			t.Errorf("%s:\n got %#v (%v)\nwant %#v (%v)", d, got, gotErr, want, wantErr)
		}
	}
}
