package policy_test

import (
	"context"
	"fmt"
	"log"

	"github.com/steward-run/steward/services/governance/policy"
)

// ExampleLoad loads the default bundle built into the binary and evaluates
// one proposed action: an irreversible payment under a low-risk task, with
// the proposer's case for it (which the default bundle requires of a
// high-risk change).
func ExampleLoad() {
	ctx := context.Background()
	engine, err := policy.Load(ctx, "") // "" is the embedded default bundle
	if err != nil {
		log.Fatal(err)
	}
	result, err := engine.Evaluate(ctx, map[string]any{
		"task": map[string]any{
			"task_id":       "task-42",
			"risk_tier":     "RISK_TIER_LOW",
			"allowed_tools": []any{"payments.send"},
		},
		"tool": map[string]any{
			"name":             "payments.send",
			"effect_class":     "EFFECT_CLASS_IRREVERSIBLE",
			"data_sensitivity": "DATA_SENSITIVITY_CONFIDENTIAL",
			"default_approval": "APPROVAL_RULE_POLICY",
		},
		"action": map[string]any{"action_id": "act-1", "tool": "payments.send", "rationale": map[string]any{
			"expected_impact": "pays invoice 7 (120 EUR) to ACME",
			"rollback_plan":   "none automatic: ask ACME for a refund",
		}},
		"risk": map[string]any{"contract_risk_tier": "RISK_TIER_LOW"},
	})
	if err != nil {
		log.Fatal(err) // treat as deny and evaluate again later
	}
	fmt.Println(result.Decision, result.RiskTier, result.RequiredApproverRoles, result.RequiredApprovals)
	fmt.Println(result.Reasons)
	fmt.Println(result.Revision == engine.Revision())
	// Output:
	// require_approval RISK_TIER_HIGH [authorizer] 1
	// [irreversible actions require approval]
	// true
}
