package canary

import (
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"
)

// example is the definition docs/canary.md walks through.
func example(t *testing.T) map[string]any {
	t.Helper()
	data, err := os.ReadFile("../../examples/canary/refunds.json")
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// at walks m by keys and indexes ("samples", 0, "kind").
func at(m any, path ...any) any {
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m = m.(map[string]any)[k]
		case int:
			m = m.([]any)[k]
		}
	}
	return m
}

func TestParseExample(t *testing.T) {
	data, _ := json.Marshal(example(t))
	d, err := Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Samples) != 3 || len(d.Contracts()) != 4 {
		t.Fatalf("%d samples, %d tools", len(d.Samples), len(d.Contracts()))
	}
	if got := d.Samples[1].contract.Budget; got.MaxCostMicros != 500000 || got.Currency != "USD" {
		t.Errorf("a contract without a budget gets the cap: %v", got)
	}
	if got := d.Approvers(); len(got) != 1 || got[0] != "user:finance" {
		t.Errorf("approvers %v", got)
	}
}

// TestParseNamesTheField: each bad field of a definition is refused by
// its path.
func TestParseNamesTheField(t *testing.T) {
	for _, tc := range []struct {
		path string
		edit func(m map[string]any)
	}{
		{"name", func(m map[string]any) { m["name"] = "Bad Name" }},
		{"colour", func(m map[string]any) { m["colour"] = "red" }},
		{"budget_cap.max_cost_micros", func(m map[string]any) { at(m, "budget_cap").(map[string]any)["max_cost_micros"] = 0 }},
		{"budget_cap.max_tokens", func(m map[string]any) { at(m, "budget_cap").(map[string]any)["max_tokens"] = 1e9 }},
		{"budget_cap.max_tokens", func(m map[string]any) { at(m, "budget_cap").(map[string]any)["max_tokens"] = "many" }},
		{"tools[1].contract", func(m map[string]any) {
			at(m, "tools", 1, "contract").(map[string]any)["http"] = map[string]any{"url": "https://payments.example"}
		}},
		{"tools[1].contract", func(m map[string]any) { at(m, "tools", 1, "contract").(map[string]any)["effect"] = "x" }},
		{"tools[1]", func(m map[string]any) { at(m, "tools", 1).(map[string]any)["staging"] = "https://staging.example" }},
		{"tools[0].staging", func(m map[string]any) {
			tool := at(m, "tools", 0).(map[string]any)
			delete(tool, "stub")
			tool["staging"] = "ftp://x"
		}},
		{"tools[3].stub.status", func(m map[string]any) { at(m, "tools", 3, "stub").(map[string]any)["status"] = 99 }},
		{"tools[2].stub.answer", func(m map[string]any) { at(m, "tools", 2, "stub").(map[string]any)["answer"] = 1 }},
		{"tools[1].contract.name", func(m map[string]any) { at(m, "tools", 1, "contract").(map[string]any)["name"] = "lookup" }},
		{"samples", func(m map[string]any) { m["samples"] = []any{} }},
		{"samples[1].kind", func(m map[string]any) { at(m, "samples", 1).(map[string]any)["kind"] = "odd" }},
		{"samples[1].name", func(m map[string]any) { at(m, "samples", 1).(map[string]any)["name"] = "refund-normal" }},
		{"samples[0].contract.budget.max_cost_micros", func(m map[string]any) {
			at(m, "samples", 0, "contract", "budget").(map[string]any)["maxCostMicros"] = 600000
		}},
		{"samples[0].contract", func(m map[string]any) { at(m, "samples", 0, "contract").(map[string]any)["owner"] = "x" }},
		{"samples[0].input", func(m map[string]any) { at(m, "samples", 0).(map[string]any)["input"] = []any{1} }},
		{"samples[0]", func(m map[string]any) {
			at(m, "samples", 0).(map[string]any)["plan"] = map[string]any{"version": 1}
		}},
		{"samples[0].steps[1].propose.tool", func(m map[string]any) { at(m, "samples", 0, "steps", 1, "propose").(map[string]any)["tool"] = "mail" }},
		{"samples[0].steps[1].propose.params_", func(m map[string]any) { at(m, "samples", 0, "steps", 1, "propose").(map[string]any)["params_"] = 1 }},
		{"samples[0].steps[0]", func(m map[string]any) {
			at(m, "samples", 0, "steps", 0).(map[string]any)["produce"] = map[string]any{"artifacts": []any{}}
		}},
		{"samples[0].steps[0].decide.model", func(m map[string]any) { at(m, "samples", 0, "steps", 0, "decide").(map[string]any)["model"] = "" }},
		{"samples[0].steps[3].produce.artifacts[0].name", func(m map[string]any) {
			at(m, "samples", 0, "steps", 3, "produce", "artifacts", 0).(map[string]any)["name"] = ""
		}},
		{"samples[1].steps[0].propose.approve_as", func(m map[string]any) {
			at(m, "samples", 1, "steps", 0, "propose").(map[string]any)["approve_as"] = Agent
		}},
		{"samples[1].steps[0].propose.approve_as", func(m map[string]any) {
			at(m, "samples", 1, "steps", 0, "propose").(map[string]any)["approve_as"] = "steward"
		}},
		{"samples[2].expect.reason", func(m map[string]any) { at(m, "samples", 2, "expect").(map[string]any)["reason"] = "" }},
		{"samples[2].expect.accepted", func(m map[string]any) { at(m, "samples", 2, "expect").(map[string]any)["accepted"] = true }},
		{"samples[0].expect.reason", func(m map[string]any) { at(m, "samples", 0, "expect").(map[string]any)["reason"] = "why" }},
		// Not accepted for any reason at all is no expectation: an edge
		// sample failing for another reason than its own would pass.
		{"samples[1].expect.reason", func(m map[string]any) {
			at(m, "samples", 1).(map[string]any)["expect"] = map[string]any{"accepted": false}
		}},
		// A wrong type deep in a list is named with its indexes (the
		// typed decode's own error drops them).
		{"samples[1].steps[0].propose.tool", func(m map[string]any) { at(m, "samples", 1, "steps", 0, "propose").(map[string]any)["tool"] = 5 }},
		{"samples[0].steps[0].decide.tokens_in", func(m map[string]any) {
			at(m, "samples", 0, "steps", 0, "decide").(map[string]any)["tokens_in"] = "many"
		}},
		{"samples[0].steps[0].decide.tokens_in", func(m map[string]any) {
			at(m, "samples", 0, "steps", 0, "decide").(map[string]any)["tokens_in"] = 1.5
		}},
		{"samples[2].expect.accepted", func(m map[string]any) { at(m, "samples", 2, "expect").(map[string]any)["accepted"] = "no" }},
		{"tools[3].stub.status", func(m map[string]any) { at(m, "tools", 3, "stub").(map[string]any)["status"] = "402" }},
		{"samples[1].steps", func(m map[string]any) { at(m, "samples", 1).(map[string]any)["steps"] = map[string]any{} }},
	} {
		m := example(t)
		tc.edit(m)
		data, _ := json.Marshal(m)
		_, err := Parse(data)
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Path != tc.path {
			t.Errorf("%s: got %v", tc.path, err)
			continue
		}
		if !strings.HasPrefix(err.Error(), tc.path+": ") {
			t.Errorf("%s: the message does not start with the path: %v", tc.path, err)
		}
	}
}

// TestParsePlanEnding: a plan sample must end produced, which is what a
// canary judges.
func TestParsePlanEnding(t *testing.T) {
	m := example(t)
	s := at(m, "samples", 0).(map[string]any)
	delete(s, "steps")
	s["plan"] = map[string]any{"version": 1, "ending": "PLAN_ENDING_HAND_BACK", "steps": []any{}}
	data, _ := json.Marshal(m)
	var fe *FieldError
	if _, err := Parse(data); !errors.As(err, &fe) || fe.Path != "samples[0].plan.ending" {
		t.Fatalf("got %v", err)
	}
}
