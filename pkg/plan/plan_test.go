package plan_test

import (
	"fmt"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/plan"
)

// release is the plan the tests start from: a fetch, a diamond (check and
// notify both after fetch, joined by publish), a foreach over fetch's
// items, a when, an expect, an approval checkpoint and a wait.
const release = `{
  "version": 1,
  "ending": "PLAN_ENDING_PRODUCE",
  "steps": [
    {"id": "fetch", "action": {"tool": "http.get", "target": "https://example.test/items"},
     "expect": "has(result.items)"},
    {"id": "check", "depends_on": ["fetch"], "action": {"tool": "lint", "tool_version": "1.0.0",
      "target_expr": "steps.fetch.result.name", "param_exprs": {"count": "size(steps.fetch.result.items)"}}},
    {"id": "notify", "depends_on": ["fetch"], "when": "steps.fetch.result.notify == true",
     "on_failure": "ON_FAILURE_CONTINUE", "action": {"tool": "chat.post", "params": {"channel": "#rel"}}},
    {"id": "each", "depends_on": ["fetch"], "foreach": {"over": "steps.fetch.result.items", "max_items": 3,
      "body": {"action": {"tool": "http.put", "target_expr": "'item/' + item.id", "param_exprs": {"body": "item"}}}},
     "expect": "result.ok"},
    {"id": "approve", "depends_on": ["check", "notify", "each"], "checkpoint": {"question": "Publish?", "choices": ["approve", "reject"]},
     "expect": "result == 'approve'"},
    {"id": "cool_off", "depends_on": ["approve"], "wait": {"duration": "60s"}},
    {"id": "publish", "depends_on": ["cool_off"], "milestone_id": "release",
     "action": {"tool": "http.put", "target": "release", "retry_policy": {"max_attempts": 2},
      "param_exprs": {"items": "steps.each.result", "notified": "steps.notify.status == 'succeeded'"}}}
  ]
}`

// env allows the tools release calls.
var env = plan.Env{AllowedTools: []string{"http.get", "lint@1.0.0", "chat.post", "http.put"}}

// mustPlan decodes a plan written as protojson.
func mustPlan(t testing.TB, js string) *stewardv1.Plan {
	t.Helper()
	p := &stewardv1.Plan{}
	if err := protojson.Unmarshal([]byte(js), p); err != nil {
		t.Fatalf("decode plan: %v", err)
	}
	return p
}

func TestValidateAcceptsARealPlan(t *testing.T) {
	if err := plan.Validate(mustPlan(t, release), plan.Limits{}, env); err != nil {
		t.Fatal(err)
	}
}

// ExampleValidate shows a refusal naming the step and the field.
func ExampleValidate() {
	p := &stewardv1.Plan{Version: 1, Ending: stewardv1.PlanEnding_PLAN_ENDING_HAND_BACK, Steps: []*stewardv1.Step{
		{Id: "read", Kind: &stewardv1.Step_Action{Action: &stewardv1.ActionStep{Tool: "kv.get", Target: "k"}}},
		{Id: "write", DependsOn: []string{"reed"}, Kind: &stewardv1.Step_Action{Action: &stewardv1.ActionStep{Tool: "kv.put", Target: "k"}}},
	}}
	fmt.Println(plan.Validate(p, plan.Limits{}, plan.Env{AllowedTools: []string{"kv.get", "kv.put"}}))
	// Output: plan.steps[1].depends_on[0]: "reed" is not a step of the plan
}
