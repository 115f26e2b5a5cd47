package app

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/steward-run/steward/pkg/canary"
)

const canaryExample = "../../../examples/canary/refunds.json"

// runCanaryCLI runs `steward canary run ARGS -o json` in-process and
// decodes its report; it fails the test unless the exit code is want.
func runCanaryCLI(t *testing.T, want int, args ...string) canary.Report {
	t.Helper()
	var out, errs bytes.Buffer
	code := Main(append([]string{"canary", "run", "-o", "json"}, args...), &out, &errs)
	if code != want {
		t.Fatalf("exit %d, want %d\n%s\n%s", code, want, out.String(), errs.String())
	}
	var rep canary.Report
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	return rep
}

// TestCanaryRunInProcess runs the example's three samples (normal, edge
// with an approval, expected failure) as real tasks through a Steward
// started in-process (embedded JetStream, real OPA, the stubs over HTTP):
// all pass, the stubs record each call with its idempotency key and the
// input put in its parameters, and the baseline is written. A new version
// of a tool and a new model pass against it, reported as changes; a
// decision past the budget fails its sample; a candidate tool contract
// of no tool of the definition is an error.
func TestCanaryRunInProcess(t *testing.T) {
	dir := t.TempDir()
	baseline := filepath.Join(dir, "refunds.baseline.json")
	rep := runCanaryCLI(t, canary.ExitPass, "--def", canaryExample, "--baseline", baseline, "--update-baseline")
	if !rep.Pass || !rep.BaselineWritten || len(rep.Verdicts) != 3 {
		t.Fatalf("%+v", rep)
	}
	kinds := map[string]canary.Verdict{}
	for _, v := range rep.Verdicts {
		kinds[v.Kind] = v
	}
	if v := kinds[canary.KindNormal]; !v.Run.Accepted || !v.NoBaseline || len(v.Run.Actions) != 2 || v.Run.CostMicros != 1200 {
		t.Errorf("normal: %+v", v)
	}
	if v := kinds[canary.KindEdge]; !v.Run.Accepted || v.Run.Actions[0].Decision != "approval" {
		t.Errorf("edge: %+v", v)
	}
	if v := kinds[canary.KindExpectedFailure]; v.Run.Accepted || !strings.Contains(v.Run.Reason, "card declined") {
		t.Errorf("expected failure: %+v", v)
	}
	tools := ""
	for _, c := range rep.StubCalls {
		tools += c.Tool + " "
		if c.IdempotencyKey == "" {
			t.Errorf("call of %s without its op_key", c.Tool)
		}
		if c.Tool == "lookup" && !strings.Contains(string(c.Body), `"o-1"`) {
			t.Errorf("lookup was not given the sample's input: %s", c.Body)
		}
	}
	if tools != "lookup refund payout charge " {
		t.Errorf("stub calls %q", tools)
	}
	if _, err := os.Stat(baseline); err != nil {
		t.Fatal(err)
	}

	refund2 := writeFileT(t, dir, "refund2.json", `{"name": "refund", "version": "2.0.0", "effectClass": "EFFECT_CLASS_IDEMPOTENT_WRITE",
	  "dataSensitivity": "DATA_SENSITIVITY_INTERNAL", "idempotency": {"honoursKey": true, "keyScope": "action", "onRepeat": "return_first"},
	  "http": {"url": "https://payments.example/refund"}}`)
	rep = runCanaryCLI(t, canary.ExitPass, "--def", canaryExample, "--baseline", baseline, "--against", "tool="+refund2)
	if s := rep.Verdicts[0].Sentence(); !strings.Contains(s, "passed (action 2 tool refund@2.0.0: version 1.0.0 → 2.0.0") {
		t.Errorf("tool candidate: %s", s)
	}
	rep = runCanaryCLI(t, canary.ExitPass, "--def", canaryExample, "--baseline", baseline, "--against", "model=gpt-b")
	if s := rep.Verdicts[0].Sentence(); !strings.Contains(s, "decision 1: model gpt-a → gpt-b") {
		t.Errorf("model candidate: %s", s)
	}

	// A decision past the budget suspends the task: Steward refuses the
	// next step, or denies its action if the proposal came first, which
	// fails the sample (exit 1), not the run (3).
	example, err := os.ReadFile(canaryExample)
	if err != nil {
		t.Fatal(err)
	}
	over := writeFileT(t, dir, "over.json", strings.Replace(string(example), `"cost_micros": 1200`, `"cost_micros": 150000`, 1))
	rep = runCanaryCLI(t, canary.ExitFail, "--def", over, "--baseline", baseline)
	if s := rep.Verdicts[0].Sentence(); rep.Pass || !strings.Contains(s, "lookup") || !strings.Contains(s, "budget") ||
		!strings.Contains(s, "(expected accepted)") || !rep.Verdicts[1].Pass {
		t.Errorf("over budget: %s", s)
	}

	var out, errs bytes.Buffer
	mail := writeFileT(t, dir, "mail.json", `{"name": "mail", "version": "1.0.0"}`)
	if code := Main([]string{"canary", "run", "--def", canaryExample, "--against", "tool=" + mail}, &out, &errs); code != canary.ExitError ||
		!strings.Contains(errs.String(), "mail is none of the definition's tools") {
		t.Errorf("exit %d: %s", code, errs.String())
	}
}

func writeFileT(t *testing.T, dir, name, text string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// canaryPlanDef has two plan samples: a read feeding a write through CEL,
// and an irreversible call the plan's approver approves.
const canaryPlanDef = `{
  "name": "refund-plans",
  "budget_cap": {"max_tokens": 1000, "max_cost_micros": 1000},
  "tools": [
    {"contract": {"name": "lookup", "version": "1.0.0", "effectClass": "EFFECT_CLASS_READ", "dataSensitivity": "DATA_SENSITIVITY_INTERNAL"},
     "stub": {"body": {"order": "o-9"}}},
    {"contract": {"name": "refund", "version": "1.0.0", "effectClass": "EFFECT_CLASS_IDEMPOTENT_WRITE", "dataSensitivity": "DATA_SENSITIVITY_INTERNAL",
       "idempotency": {"honoursKey": true, "keyScope": "action", "onRepeat": "return_first"}},
     "stub": {}},
    {"contract": {"name": "payout", "version": "1.0.0", "effectClass": "EFFECT_CLASS_IRREVERSIBLE", "dataSensitivity": "DATA_SENSITIVITY_INTERNAL"},
     "stub": {}}
  ],
  "samples": [
    {"name": "refund-plan", "kind": "normal",
     "contract": {"intent": "Refund by plan", "desiredOutcome": "refunded", "requesterRef": "user:ana", "accountableOwnerRef": "user:ana", "riskTier": "RISK_TIER_LOW",
       "allowedTools": ["lookup", "refund"], "acceptanceCriteria": [{"id": "refunded", "expression": "actions.exists(a, a.tool == \"refund\" && a.status == \"succeeded\")"}]},
     "plan": {"version": 1, "ending": "PLAN_ENDING_PRODUCE", "steps": [
       {"id": "find", "action": {"tool": "lookup", "target": "orders", "params": {"order": "o-9"}}},
       {"id": "pay", "dependsOn": ["find"], "action": {"tool": "refund", "target": "payments", "paramExprs": {"order": "steps.find.result.order"}}}]},
     "expect": {"accepted": true}},
    {"name": "payout-plan", "kind": "edge", "approve_as": "user:finance",
     "contract": {"intent": "Pay out by plan", "desiredOutcome": "paid", "requesterRef": "user:ana", "accountableOwnerRef": "user:ana", "riskTier": "RISK_TIER_MEDIUM",
       "allowedTools": ["payout"], "acceptanceCriteria": [{"id": "paid", "expression": "actions.exists(a, a.tool == \"payout\" && a.status == \"succeeded\")"}]},
     "plan": {"version": 1, "ending": "PLAN_ENDING_PRODUCE", "steps": [
       {"id": "pay", "action": {"tool": "payout", "target": "bank", "params": {"order": "o-9"},
        "rationale": {"expectedImpact": "a cent leaves", "rollbackPlan": "none: final"}}}]},
     "expect": {"accepted": true}}
  ]
}`

// TestCanaryRunPlans: samples given as plans run to acceptance, the
// approval a plan waits for given by its approver, and the write fed by
// the read's result (the stub got the order the lookup answered).
func TestCanaryRunPlans(t *testing.T) {
	dir := t.TempDir()
	def := writeFileT(t, dir, "plans.json", canaryPlanDef)
	rep := runCanaryCLI(t, canary.ExitPass, "--def", def, "--sample-timeout", "1m")
	if len(rep.Verdicts) != 2 || !rep.Verdicts[0].Run.Accepted || !rep.Verdicts[1].Run.Accepted {
		t.Fatalf("%+v", rep)
	}
	if got := rep.Verdicts[1].Run.Actions; len(got) != 1 || got[0].Decision != "approval" || got[0].Status != "succeeded" {
		t.Errorf("payout: %+v", got)
	}
	fed := false
	for _, c := range rep.StubCalls {
		fed = fed || c.Tool == "refund" && strings.Contains(string(c.Body), `"o-9"`)
	}
	if !fed {
		t.Errorf("the refund was not given the lookup's order: %+v", rep.StubCalls)
	}
}
