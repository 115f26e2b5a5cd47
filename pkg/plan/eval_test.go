package plan_test

import (
	"context"
	"reflect"
	"strings"
	"testing"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/plan"
)

const succeeded = stewardv1.StepStatus_STEP_STATUS_SUCCEEDED

// fetched is release's fetch step having returned result.
func fetched(result any) map[string]plan.Outcome {
	return map[string]plan.Outcome{"fetch": {Status: succeeded, Result: result}}
}

// items is a JSON list of n items, as encoding/json decodes it.
func items(n int) []any {
	out := make([]any, n)
	for i := range out {
		out[i] = map[string]any{"id": string(rune('a' + i))}
	}
	return out
}

func TestEvalWhen(t *testing.T) {
	ctx := context.Background()
	p := mustPlan(t, release)
	tests := []struct {
		name   string
		id     string
		steps  map[string]plan.Outcome
		want   bool
		errSay string
	}{
		{"true", "notify", fetched(map[string]any{"notify": true}), true, ""},
		{"false", "notify", fetched(map[string]any{"notify": false}), false, ""},
		{"no when: runs", "check", fetched(nil), true, ""},
		{"a missing key", "notify", fetched(map[string]any{}), false, "no such key: notify"},
		{"no outcome for a step it reads", "notify", nil, false, "step fetch has no outcome yet"},
		{"an unknown step", "nope", nil, false, `plan has no step "nope"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := plan.EvalWhen(ctx, p, tt.id, plan.Bindings{Steps: tt.steps})
			if tt.errSay != "" {
				if err == nil || !strings.Contains(err.Error(), tt.errSay) {
					t.Fatalf("got %v, %v; want an error saying %q", got, err, tt.errSay)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("got %v, %v; want %v", got, err, tt.want)
			}
		})
	}

	// A dyn that is not a bool when evaluated.
	step(p, "notify").When = "steps.fetch.result.notify"
	if _, err := plan.EvalWhen(ctx, p, "notify", plan.Bindings{Steps: fetched(map[string]any{"notify": "yes"})}); err == nil || !strings.Contains(err.Error(), "plan.steps[2].when: evaluated to string, not true or false") {
		t.Fatalf("a string for a condition: %v", err)
	}
}

func TestEvalExpect(t *testing.T) {
	ctx := context.Background()
	p := mustPlan(t, release)
	tests := []struct {
		name string
		id   string
		b    plan.Bindings
		want bool
	}{
		{"read back: present", "fetch", plan.Bindings{Result: map[string]any{"items": []any{}}}, true},
		{"read back: missing", "fetch", plan.Bindings{Result: map[string]any{}}, false},
		{"approved", "approve", plan.Bindings{Steps: allDone(), Result: "approve"}, true},
		{"rejected", "approve", plan.Bindings{Steps: allDone(), Result: "reject"}, false},
		{"a foreach item", "each", plan.Bindings{Steps: fetched(nil), Item: map[string]any{"id": "a"}, Result: map[string]any{"ok": true}}, true},
		{"no expect", "check", plan.Bindings{Steps: fetched(nil)}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got, err := plan.EvalExpect(ctx, p, tt.id, tt.b); err != nil || got != tt.want {
				t.Fatalf("got %v, %v; want %v", got, err, tt.want)
			}
		})
	}
}

// allDone is an outcome for each of approve's dependencies.
func allDone() map[string]plan.Outcome {
	return map[string]plan.Outcome{
		"fetch": {Status: succeeded}, "check": {Status: succeeded},
		"notify": {Status: stewardv1.StepStatus_STEP_STATUS_SKIPPED}, "each": {Status: succeeded},
	}
}

func TestEvalForeach(t *testing.T) {
	ctx := context.Background()
	p := mustPlan(t, release)
	got, err := plan.EvalForeach(ctx, p, "each", plan.Bindings{Steps: fetched(map[string]any{"items": items(3)})})
	if err != nil || !reflect.DeepEqual(got, items(3)) {
		t.Fatalf("got %v, %v; want %v", got, err, items(3))
	}
	for name, tt := range map[string]struct {
		result any
		says   string
	}{
		"past max_items": {map[string]any{"items": items(4)}, "the list has 4 items; max_items is 3"},
		"not a list":     {map[string]any{"items": "abc"}, "plan.steps[3].foreach.over: evaluated to string, not a list"},
	} {
		if _, err := plan.EvalForeach(ctx, p, "each", plan.Bindings{Steps: fetched(tt.result)}); err == nil || !strings.Contains(err.Error(), tt.says) {
			t.Errorf("%s: %v, want an error saying %q", name, err, tt.says)
		}
	}
	if _, err := plan.EvalForeach(ctx, p, "fetch", plan.Bindings{}); err == nil {
		t.Errorf("fetch is no foreach, and evaluated as one")
	}
}

func TestEvalParams(t *testing.T) {
	ctx := context.Background()
	p := mustPlan(t, release)
	fetch := fetched(map[string]any{"name": "v1.2", "items": items(2)})
	tests := []struct {
		name       string
		id         string
		b          plan.Bindings
		wantTarget string
		wantParams map[string]any
	}{
		{"computed target and param", "check", plan.Bindings{Steps: fetch}, "v1.2", map[string]any{"count": float64(2)}},
		{"literal only", "notify", plan.Bindings{Steps: fetch}, "", map[string]any{"channel": "#rel"}},
		{"a foreach item", "each", plan.Bindings{Steps: fetch, Item: map[string]any{"id": "b"}}, "item/b", map[string]any{"body": map[string]any{"id": "b"}}},
		{"earlier results and statuses", "publish", plan.Bindings{Steps: map[string]plan.Outcome{
			"fetch": {Status: succeeded}, "check": {Status: succeeded}, "each": {Status: succeeded, Result: []any{map[string]any{"ok": true}}},
			"notify": {Status: stewardv1.StepStatus_STEP_STATUS_SKIPPED}, "approve": {Status: succeeded, Result: "approve"}, "cool_off": {Status: succeeded},
		}}, "release", map[string]any{"items": []any{map[string]any{"ok": true}}, "notified": false}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			target, params, err := plan.EvalParams(ctx, p, tt.id, tt.b)
			if err != nil || target != tt.wantTarget || !reflect.DeepEqual(params, tt.wantParams) {
				t.Fatalf("got %q %v, %v; want %q %v", target, params, err, tt.wantTarget, tt.wantParams)
			}
		})
	}
}

// TestEvalRefusesNonFiniteNumbers: a computed number JSON cannot hold
// (a division by zero) fails the step; it is not handed to the tool as
// the string "Infinity" or "NaN", nor a foreach item as one.
func TestEvalRefusesNonFiniteNumbers(t *testing.T) {
	ctx := context.Background()
	p := mustPlan(t, release)
	fetch := fetched(map[string]any{"name": "n", "items": items(2), "total": 3.0, "n": 0.0})
	for expr, say := range map[string]string{
		"steps.fetch.result.total / steps.fetch.result.n":  "+Inf is not a JSON number",
		"{'ratio': [0.0 / steps.fetch.result.n]}":          "NaN is not a JSON number",
		"-steps.fetch.result.total / steps.fetch.result.n": "-Inf is not a JSON number",
	} {
		step(p, "check").GetAction().ParamExprs["count"] = expr
		if _, params, err := plan.EvalParams(ctx, p, "check", plan.Bindings{Steps: fetch}); err == nil || !strings.Contains(err.Error(), say) {
			t.Errorf("param %s: got %v, %v; want an error saying %q", expr, params, err, say)
		}
	}
	step(p, "each").GetForeach().Over = "[1.0, steps.fetch.result.total / steps.fetch.result.n]"
	if got, err := plan.EvalForeach(ctx, p, "each", plan.Bindings{Steps: fetch}); err == nil || !strings.Contains(err.Error(), "+Inf is not a JSON number") {
		t.Errorf("foreach over an infinity: got %v, %v; want an error", got, err)
	}
}

// TestEvalIsDeterministic: a map's keys come out in order every time, so a
// computed parameter, and the action's canonical request, do not change
// from one evaluation to the next.
func TestEvalIsDeterministic(t *testing.T) {
	p := mustPlan(t, release)
	step(p, "check").GetAction().ParamExprs["keys"] = "steps.fetch.result.obj.map(k, k)"
	obj := map[string]any{}
	for _, k := range strings.Split("q w e r t y u i o p", " ") {
		obj[k] = true
	}
	b := plan.Bindings{Steps: fetched(map[string]any{"name": "n", "items": []any{}, "obj": obj})}
	want := []any{"e", "i", "o", "p", "q", "r", "t", "u", "w", "y"}
	for range 20 {
		_, params, err := plan.EvalParams(context.Background(), p, "check", b)
		if err != nil || !reflect.DeepEqual(params["keys"], want) {
			t.Fatalf("keys = %v, %v; want %v", params["keys"], err, want)
		}
	}
}

// TestEvalCostLimit: an expression whose work grows as a cube of its
// input stops at the cost limit instead of running on (or at MaxEvalTime,
// which a slow machine or -race reaches first).
func TestEvalCostLimit(t *testing.T) {
	p := mustPlan(t, release)
	step(p, "notify").When = "steps.fetch.result.items.all(x, steps.fetch.result.items.all(y, steps.fetch.result.items.all(z, true)))"
	if err := plan.Validate(p, plan.Limits{}, env); err != nil {
		t.Fatal(err)
	}
	_, err := plan.EvalWhen(context.Background(), p, "notify", plan.Bindings{Steps: fetched(map[string]any{"items": items(26)})})
	if err != nil {
		t.Fatalf("26 items: %v", err)
	}
	big := make([]any, 200)
	_, err = plan.EvalWhen(context.Background(), p, "notify", plan.Bindings{Steps: fetched(map[string]any{"items": big})})
	if err == nil || !strings.Contains(err.Error(), "cost limit exceeded") && !strings.Contains(err.Error(), "took longer than") {
		t.Fatalf("200³ steps: %v, want the cost or time limit", err)
	}
}
