package policy_test

import (
	"context"
	"strings"
	"testing"

	"github.com/steward-run/steward/services/governance/policy"
)

// TestEvaluatePlan: the plan query's default and its fail-closed cases. A
// bundle with no steward.plan package allows every plan (each step is
// judged when it runs); one that has the package but gives no usable
// decision denies, as for actions.
func TestEvaluatePlan(t *testing.T) {
	action := "package steward.policy\n\ndecision := {\"decision\": \"allow\"}\n"
	tests := []struct {
		name     string
		plan     string // the steward.plan module; "" for none
		decision string
		reason   string
	}{
		{name: "no plan rule", decision: policy.Allow, reason: policy.NoPlanRule},
		{name: "a plan rule", plan: "package steward.plan\n\ndecision := {\"decision\": \"require_approval\", \"reasons\": [\"big\"]}\n", decision: policy.RequireApproval, reason: "big"},
		{name: "undefined decision", plan: "package steward.plan\n\ndecision := {\"decision\": \"allow\"} if input.trusted\n", decision: policy.Deny, reason: "data.steward.plan.decision is undefined"},
		{name: "malformed decision", plan: "package steward.plan\n\ndecision := \"allow\"\n", decision: policy.Deny, reason: "data.steward.plan.decision is string, not an object"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			files := map[string]string{"a.rego": action}
			if tt.plan != "" {
				files["plan.rego"] = tt.plan
			}
			dir := t.TempDir()
			writeBundle(t, dir, files)
			engine, err := policy.Load(context.Background(), dir)
			if err != nil {
				t.Fatal(err)
			}
			got, err := engine.EvaluatePlan(context.Background(), map[string]any{"trusted": false})
			if err != nil {
				t.Fatal(err)
			}
			if got.Decision != tt.decision || len(got.Reasons) != 1 || !strings.Contains(got.Reasons[0], tt.reason) || got.Revision != engine.Revision() {
				t.Errorf("EvaluatePlan = %+v, want %s with a reason containing %q", got, tt.decision, tt.reason)
			}
		})
	}
}

// TestDefaultBundleHasAPlanRule: the default bundle judges plans (plan.rego).
func TestDefaultBundleHasAPlanRule(t *testing.T) {
	engine, err := policy.Load(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	got, err := engine.EvaluatePlan(context.Background(), map[string]any{"counts": map[string]any{"effects": map[string]any{}}})
	if err != nil {
		t.Fatal(err)
	}
	if got.Decision != policy.Allow || len(got.Reasons) != 1 || got.Reasons[0] == policy.NoPlanRule {
		t.Errorf("EvaluatePlan = %+v, want the default plan rule's allow", got)
	}
}
