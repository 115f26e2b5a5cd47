package governance_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/tester"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/services/governance"
	"github.com/steward-run/steward/services/governance/policy"
)

// modelDecisionsBundle is the example bundle that weighs the decision
// behind an action.
const modelDecisionsBundle = "policy/examples/model_decisions"

// TestPolicyWeighsTheDecision: a proposal that names its model decision
// is judged knowing it (input.decision). Under the example bundle, whose
// Rego tests pass here, a write decided by a trusted model whose call
// Steward observed, sure of itself, runs; the same model below the
// confidence threshold waits for a person; the same model id only
// reported by the agent waits for a person too, where the observed one
// did not; an untrusted model's write is denied.
func TestPolicyWeighsTheDecision(t *testing.T) {
	ctx := context.Background()
	modules, store, err := tester.LoadWithRegoVersion([]string{modelDecisionsBundle}, nil, ast.RegoV1)
	if err != nil {
		t.Fatal(err)
	}
	results, err := tester.NewRunner().SetStore(store).SetDefaultRegoVersion(ast.RegoV1).SetTimeout(30*time.Second).Run(ctx, modules)
	if err != nil {
		t.Fatal(err)
	}
	ran := 0
	for r := range results {
		ran++
		if r.Error != nil || r.Fail || r.Skip {
			t.Errorf("%s.%s: failed (%v)", r.Package, r.Name, r.Error)
		}
	}
	if ran == 0 {
		t.Fatal("no Rego tests ran")
	}

	engine, err := policy.Load(ctx, modelDecisionsBundle)
	if err != nil {
		t.Fatal(err)
	}
	e := newHarness(t)
	e.start(t, func(c *governance.Config) { c.Engine = engine })
	e.create(t, "weighed", "user:ana", credContract([]string{"search", "wire"}, []string{"payments:write"}))
	e.credentialed("weighed")
	decide := func(id, model string, provenance stewardv1.Provenance, confidence float64) {
		e.Append("weighed", &stewardv1.DecisionRecorded{Decision: &stewardv1.Decision{DecisionId: id, Confidence: &confidence,
			Call:  &stewardv1.ModelCall{Provider: "openai", ModelId: model, Provenance: provenance},
			LedTo: &stewardv1.Decision_NoAction{NoAction: &stewardv1.NoAction{}}}})
	}
	observed, reported := stewardv1.Provenance_PROVENANCE_OBSERVED, stewardv1.Provenance_PROVENANCE_REPORTED
	for _, tt := range []struct {
		name       string
		model      string
		provenance stewardv1.Provenance
		confidence float64
		want       stewardv1.ActionStatus
		reason     string
	}{
		{"observed, trusted and sure", "gpt-strong", observed, 0.9, stewardv1.ActionStatus_ACTION_STATUS_PERMITTED, "a trusted model decided it"},
		{"below the confidence threshold", "gpt-strong", observed, 0.4, stewardv1.ActionStatus_ACTION_STATUS_AWAITING_APPROVAL, "the model's confidence 0.4 is below 0.7"},
		{"the same model id, reported", "gpt-strong", reported, 0.9, stewardv1.ActionStatus_ACTION_STATUS_AWAITING_APPROVAL, "model gpt-strong is the agent's word, not a call Steward observed"},
		{"an untrusted model", "gpt-small", observed, 0.9, stewardv1.ActionStatus_ACTION_STATUS_DENIED, "model gpt-small is not one this policy lets write"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			id := "d-" + tt.model + "-" + tt.provenance.String() + "-" + time.Duration(tt.confidence*1000).String()
			decide(id, tt.model, tt.provenance, tt.confidence)
			actionID := e.proposeWith(t, "weighed", "p-"+id, "wire", "", "agent", map[string]any{"n": 1},
				&stewardv1.ActionRationale{ExpectedImpact: "moves money", RollbackPlan: "ask for it back"},
				func(a *stewardv1.Action) { a.DecisionId = id })
			a := e.waitStatus("weighed", actionID, tt.want)
			if got := a.GetSnapshot().GetReasons(); len(got) != 1 || !strings.Contains(got[0], tt.reason) {
				t.Errorf("reasons %q, want one saying %q", got, tt.reason)
			}
		})
	}
}
