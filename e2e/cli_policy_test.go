package e2e_test

import (
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// policyBundle is a bundle that asks two of finance to approve a payment
// and allows everything else.
const policyBundle = `package steward.policy

decision := {"decision": "require_approval", "risk_tier": "RISK_TIER_HIGH", "required_approver_roles": ["finance"],
	"required_approvals": 2, "reasons": ["money moves: two of finance"]} if input.action.tool == "pay"

decision := {"decision": "allow", "reasons": ["not money"]} if input.action.tool != "pay"
`

// TestCLIPolicy runs a bundle's Rego tests with `steward policy test`, the
// real binary and no server: a failing test exits 1 and names the test,
// and once it is put right every test passes; `steward policy eval`
// prints the decision the bundle gives an input, for people and as a
// PolicySnapshot.
func TestCLIPolicy(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "policy.rego", policyBundle)
	test := func(lookup string) string {
		return `package steward.policy_test

import data.steward.policy

test_pay_needs_two_of_finance if {
	d := policy.decision with input as {"action": {"tool": "pay"}}
	d.required_approver_roles == ["finance"]
	d.required_approvals == 2
}

test_lookup_is_allowed if {
	policy.decision.decision == "` + lookup + `" with input as {"action": {"tool": "lookup"}}
}
`
	}
	writeFile(t, dir, "policy_test.rego", test("deny"))
	out, errs := runBinary(t, nil, 1, "policy", "test", dir)
	if !strings.Contains(out, "FAIL  data.steward.policy_test.test_lookup_is_allowed") || !strings.Contains(out, "policy_test.rego:11") ||
		!strings.Contains(out, "PASS  data.steward.policy_test.test_pay_needs_two_of_finance") {
		t.Errorf("policy test: want the failing test named with its line, the other passed:\n%s", out)
	}
	if !strings.Contains(errs, "1 of 2 policy tests did not pass: data.steward.policy_test.test_lookup_is_allowed") {
		t.Errorf("policy test: stderr does not name the failing test: %q", errs)
	}
	out, _ = runBinary(t, nil, 1, "policy", "test", dir, "-o", "json")
	if !strings.Contains(out, `"name":"data.steward.policy_test.test_lookup_is_allowed","file":"`) || !strings.Contains(out, `"outcome":"fail"`) {
		t.Errorf("policy test -o json:\n%s", out)
	}
	writeFile(t, dir, "policy_test.rego", test("allow"))
	if out, _ := runBinary(t, nil, 0, "policy", "test", dir); !strings.HasSuffix(out, "2 policy tests passed\n") {
		t.Errorf("policy test of a bundle put right:\n%s", out)
	}
	writeFile(t, dir, "broken.rego", "package steward.policy\n\ndecision := {\n")
	runBinary(t, nil, 1, "policy", "test", dir)

	bundle := t.TempDir()
	writeFile(t, bundle, "policy.rego", policyBundle)
	pay := writeFile(t, t.TempDir(), "pay.json", `{"action": {"tool": "pay", "params": {"amount": 12.5}}}`)
	out, _ = runBinary(t, nil, 0, "policy", "eval", bundle, "--input", pay)
	for _, want := range []string{"decision:  require_approval\n", "risk tier: high\n", "roles:     finance\n", "approvals: 2\n", "reason:    money moves: two of finance\n", "revision:  sha256:"} {
		if !strings.Contains(out, want) {
			t.Errorf("policy eval does not print %q:\n%s", want, out)
		}
	}
	out, _ = runBinary(t, nil, 0, "policy", "eval", bundle, "--input", pay, "-o", "json")
	var snap stewardv1.PolicySnapshot
	if err := protojson.Unmarshal([]byte(out), &snap); err != nil || snap.Decision != stewardv1.PolicyDecision_POLICY_DECISION_REQUIRE_APPROVAL ||
		snap.RiskTier != stewardv1.RiskTier_RISK_TIER_HIGH || snap.RequiredApprovals != 2 || !strings.HasPrefix(snap.BundleRevision, "sha256:") {
		t.Errorf("policy eval -o json: want a PolicySnapshot of the bundle's decision: %v\n%s", err, out)
	}
	lookup := writeFile(t, t.TempDir(), "lookup.json", `{"action": {"tool": "lookup"}}`)
	if out, _ := runBinary(t, nil, 0, "policy", "eval", bundle, "--input", lookup); !strings.HasPrefix(out, "decision: allow\n") {
		t.Errorf("policy eval of a lookup:\n%s", out)
	}
	runBinary(t, nil, 2, "policy", "eval", bundle)
	runBinary(t, nil, 2, "policy", "eval", bundle, "--input", writeFile(t, t.TempDir(), "list.json", `[1]`))
	runBinary(t, nil, 1, "policy", "eval", filepath.Join(bundle, "missing"), "--input", pay)
}
