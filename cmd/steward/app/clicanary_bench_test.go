package app

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/policycanary"
	"github.com/steward-run/steward/services/governance/policy"
)

// canaryInputs are n recorded snapshots over three tools and three
// tiers, each of its own input shaped as governance's (task, tool,
// action, credential, risk), decided allow under the default bundle.
func canaryInputs(b *testing.B, n int) []*stewardv1.RecordedSnapshot {
	tools := []map[string]any{
		{"name": "search", "version": "1.0.0", "effect_class": "EFFECT_CLASS_READ", "data_sensitivity": "DATA_SENSITIVITY_INTERNAL"},
		{"name": "write", "version": "1.0.0", "effect_class": "EFFECT_CLASS_IDEMPOTENT_WRITE", "data_sensitivity": "DATA_SENSITIVITY_INTERNAL"},
		{"name": "wire", "version": "1.0.0", "effect_class": "EFFECT_CLASS_IRREVERSIBLE", "data_sensitivity": "DATA_SENSITIVITY_INTERNAL"},
	}
	tiers := []string{"RISK_TIER_LOW", "RISK_TIER_MEDIUM", "RISK_TIER_HIGH"}
	out := make([]*stewardv1.RecordedSnapshot, n)
	for i := range out {
		tool, tier := tools[(i/3)%3], tiers[i%3]
		input, err := json.Marshal(map[string]any{
			"task": map[string]any{"task_id": fmt.Sprintf("task-%d", i%50), "intent": "Summarise last week's incidents", "risk_tier": tier,
				"allowed_tools": []string{"search", "write", "wire"}, "requester_ref": "user:ana", "accountable_owner_ref": "user:ana", "status": "TASK_STATUS_RUNNING"},
			"tool": tool,
			"action": map[string]any{"action_id": fmt.Sprintf("act-%d", i), "tool": tool["name"], "tool_version": "1.0.0", "target": "acct:42",
				"params": map[string]any{"q": fmt.Sprint(i)}, "effect_class": tool["effect_class"], "proposed_by": "agent:lead",
				"rationale": map[string]any{"expected_impact": "one transfer", "rollback_plan": "reverse it"}},
			"credential": map[string]any{"credential_id": "cred-1", "scopes": []string{"search", "write", "wire"}},
			"risk":       map[string]any{"contract_risk_tier": tier},
		})
		if err != nil {
			b.Fatal(err)
		}
		out[i] = &stewardv1.RecordedSnapshot{TaskId: fmt.Sprintf("task-%d", i%50), ActionId: fmt.Sprintf("act-%d", i), Tool: tool["name"].(string),
			Kind: stewardv1.PolicySnapshotKind_POLICY_SNAPSHOT_KIND_ACTION, Input: input,
			Snapshot: &stewardv1.PolicySnapshot{SnapshotId: fmt.Sprintf("snap-%d", i), InputHash: fmt.Sprintf("h-%d", i), InputKept: true,
				Decision: stewardv1.PolicyDecision_POLICY_DECISION_ALLOW, EvaluatedAt: timestamppb.New(time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC))}}
	}
	return out
}

// BenchmarkPolicyCanary measures the canary's side of a run, per run of
// 100 and of 10,000 recorded snapshots: each input decoded and evaluated
// under a candidate bundle compiled by governance's loader (the default
// bundle with one more deny rule), and compared. docs/policy-canary.md
// records the numbers.
func BenchmarkPolicyCanary(b *testing.B) {
	dir := b.TempDir()
	src, err := os.ReadFile(filepath.Join("..", "..", "..", "services", "governance", "policy", "default", "steward.rego"))
	if err != nil {
		b.Fatal(err)
	}
	rule := "\ndeny_reasons contains \"search is retired\" if tool_name == \"search\"\n"
	if err := os.WriteFile(filepath.Join(dir, "steward.rego"), append(src, rule...), 0o600); err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	e, err := policy.Load(ctx, dir)
	if err != nil {
		b.Fatal(err)
	}
	for _, n := range []int{100, 10_000} {
		recs := canaryInputs(b, n)
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			for b.Loop() {
				c := policycanary.New(engineEvaluator(e), e.Revision())
				for _, r := range recs {
					c.Add(ctx, r)
				}
				if r := c.Report(); r.Reevaluated != n || len(r.Changes) == 0 {
					b.Fatalf("re-evaluated %d of %d, %d changes", r.Reevaluated, n, len(r.Changes))
				}
			}
		})
	}
}
