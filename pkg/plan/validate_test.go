package plan_test

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/steward-run/steward/pkg/errs"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/plan"
)

// action is a step calling tool, depending on deps.
func action(id, tool string, deps ...string) *stewardv1.Step {
	return &stewardv1.Step{Id: id, DependsOn: deps, Kind: &stewardv1.Step_Action{Action: &stewardv1.ActionStep{Tool: tool, Target: "t"}}}
}

// chain is a plan of n steps, each depending on the one before.
func chain(n int) *stewardv1.Plan {
	p := &stewardv1.Plan{Version: 1, Ending: stewardv1.PlanEnding_PLAN_ENDING_PRODUCE}
	for i := range n {
		s := action(fmt.Sprintf("s%d", i), "http.get")
		if i > 0 {
			s.DependsOn = []string{fmt.Sprintf("s%d", i-1)}
		}
		p.Steps = append(p.Steps, s)
	}
	return p
}

// step returns release's step id, to change it.
func step(p *stewardv1.Plan, id string) *stewardv1.Step {
	for _, s := range p.Steps {
		if s.Id == id {
			return s
		}
	}
	panic("no step " + id)
}

// toolContracts is a registry of two tools with retry policies.
func toolContracts(name, version string) (*stewardv1.ToolContract, error) {
	switch name {
	case "http.put", "http.get", "chat.post", "lint":
		return &stewardv1.ToolContract{Name: name, Version: "1.0.0", RetryPolicy: &stewardv1.RetryPolicy{MaxAttempts: 3}}, nil
	}
	return nil, errors.New("not registered")
}

func TestValidateRefuses(t *testing.T) {
	tests := []struct {
		name   string
		change func(p *stewardv1.Plan) *stewardv1.Plan
		limits plan.Limits
		env    *plan.Env
		field  string
		says   string
	}{
		{name: "no plan", change: func(*stewardv1.Plan) *stewardv1.Plan { return nil }, field: "plan", says: "is required"},
		{name: "no version", change: func(p *stewardv1.Plan) *stewardv1.Plan { p.Version = 0; return p }, field: "plan.version", says: "is required"},
		{name: "no ending", change: func(p *stewardv1.Plan) *stewardv1.Plan { p.Ending = 0; return p }, field: "plan.ending", says: "is required"},
		{name: "unknown ending", change: func(p *stewardv1.Plan) *stewardv1.Plan { p.Ending = 9; return p }, field: "plan.ending", says: "is required"},
		{name: "no steps", change: func(p *stewardv1.Plan) *stewardv1.Plan { p.Steps = nil; return p }, field: "plan.steps", says: "at least one step"},
		{name: "empty id", change: func(p *stewardv1.Plan) *stewardv1.Plan { p.Steps[2].Id = ""; return p }, field: "plan.steps[2].id", says: "is required"},
		{name: "malformed id", change: func(p *stewardv1.Plan) *stewardv1.Plan { p.Steps[2].Id = "no-tify"; return p }, field: "plan.steps[2].id", says: "not an identifier"},
		{name: "reserved id", change: func(p *stewardv1.Plan) *stewardv1.Plan { p.Steps[0].Id = "in"; return p }, field: "plan.steps[0].id", says: "reserved word"},
		{name: "long id", change: func(p *stewardv1.Plan) *stewardv1.Plan { p.Steps[0].Id = strings.Repeat("a", 65); return p }, field: "plan.steps[0].id", says: "the limit is 64"},
		{name: "duplicate id", change: func(p *stewardv1.Plan) *stewardv1.Plan { p.Steps[3].Id = "check"; return p }, field: "plan.steps[3].id", says: `"check" appears twice (also plan.steps[1].id)`},
		{name: "unknown dependency", change: func(p *stewardv1.Plan) *stewardv1.Plan { p.Steps[4].DependsOn[1] = "notfy"; return p }, field: "plan.steps[4].depends_on[1]", says: `"notfy" is not a step of the plan`},
		{name: "empty dependency", change: func(p *stewardv1.Plan) *stewardv1.Plan { p.Steps[4].DependsOn[1] = ""; return p }, field: "plan.steps[4].depends_on[1]", says: "is empty"},
		{name: "self dependency", change: func(p *stewardv1.Plan) *stewardv1.Plan { p.Steps[1].DependsOn = []string{"check"}; return p }, field: "plan.steps[1].depends_on[0]", says: "depends on itself"},
		{name: "repeated dependency", change: func(p *stewardv1.Plan) *stewardv1.Plan { p.Steps[1].DependsOn = []string{"fetch", "fetch"}; return p }, field: "plan.steps[1].depends_on[1]", says: "listed twice"},
		{name: "cycle", change: func(p *stewardv1.Plan) *stewardv1.Plan {
			step(p, "fetch").DependsOn = []string{"publish"}
			return p
		}, field: "plan.steps[1].depends_on[0]", says: "makes a cycle: fetch → publish → cool_off → approve → check → fetch"},
		{name: "too many steps", change: func(*stewardv1.Plan) *stewardv1.Plan { return chain(11) }, limits: plan.Limits{MaxSteps: 10}, field: "plan.steps", says: "has 11 steps; the limit is 10"},
		{name: "too deep", change: func(*stewardv1.Plan) *stewardv1.Plan { return chain(6) }, limits: plan.Limits{MaxDepth: 5}, field: "plan.steps[5].depends_on", says: "a chain of 6 steps; the limit is 5"},
		{name: "fan-out", change: func(p *stewardv1.Plan) *stewardv1.Plan { return p }, limits: plan.Limits{MaxFanOut: 2}, field: "plan.steps[3].depends_on[0]", says: "more than 2 steps depending on it"},
		{name: "foreach past its limit", change: func(p *stewardv1.Plan) *stewardv1.Plan { return p }, limits: plan.Limits{MaxForeachItems: 2}, field: "plan.steps[3].foreach.max_items", says: "is 3; the limit is 2"},
		{name: "foreach without a bound", change: func(p *stewardv1.Plan) *stewardv1.Plan { step(p, "each").GetForeach().MaxItems = 0; return p }, field: "plan.steps[3].foreach.max_items", says: "is required"},
		{name: "expression too long", change: func(p *stewardv1.Plan) *stewardv1.Plan {
			step(p, "notify").When = "true" + strings.Repeat(" && true", 20)
			return p
		}, limits: plan.Limits{MaxExprBytes: 64}, field: "plan.steps[2].when", says: "the limit is 64"},
		{name: "too many computed params", change: func(p *stewardv1.Plan) *stewardv1.Plan { return p }, limits: plan.Limits{MaxParamExprs: 1}, field: "plan.steps[6].action.param_exprs", says: "has 2 entries; the limit is 1"},
		{name: "wait too long", change: func(p *stewardv1.Plan) *stewardv1.Plan { return p }, limits: plan.Limits{MaxWait: time.Second}, field: "plan.steps[5].wait.duration", says: "longer than 1s"},
		{name: "tool outside the credential", change: func(p *stewardv1.Plan) *stewardv1.Plan { step(p, "publish").GetAction().Tool = "shell"; return p }, field: "plan.steps[6].action.tool", says: `"shell" is not among the tools`},
		{name: "version outside the pin", change: func(p *stewardv1.Plan) *stewardv1.Plan { step(p, "check").GetAction().ToolVersion = "2.0.0"; return p }, field: "plan.steps[1].action.tool_version", says: `"lint@2.0.0" is not among`},
		{name: "foreach body tool outside", change: func(p *stewardv1.Plan) *stewardv1.Plan {
			step(p, "each").GetForeach().Body.GetAction().Tool = "shell"
			return p
		}, field: "plan.steps[3].foreach.body.action.tool", says: "not among the tools"},
		{name: "sub-task widening tools", change: func(p *stewardv1.Plan) *stewardv1.Plan {
			step(p, "check").Kind = &stewardv1.Step_SubTask{SubTask: &stewardv1.SubTaskStep{DelegateRef: "agent:b", Contract: &stewardv1.TaskContract{AllowedTools: []string{"lint@1.0.0", "shell"}}}}
			return p
		}, field: "plan.steps[1].sub_task.contract.allowed_tools[1]", says: "only keep or narrow"},
		{name: "sub-task without a delegate", change: func(p *stewardv1.Plan) *stewardv1.Plan {
			step(p, "check").Kind = &stewardv1.Step_SubTask{SubTask: &stewardv1.SubTaskStep{Contract: &stewardv1.TaskContract{}}}
			return p
		}, field: "plan.steps[1].sub_task.delegate_ref", says: "is required"},
		{name: "tool not registered", change: func(p *stewardv1.Plan) *stewardv1.Plan {
			p.Steps = append(p.Steps, action("extra", "kv.put"))
			return p
		}, env: &plan.Env{AllowedTools: []string{"http.get", "lint", "chat.post", "http.put", "kv.put"}, Tool: toolContracts}, field: "plan.steps[7].action.tool", says: "not registered"},
		{name: "retry raised past the tool's", change: func(p *stewardv1.Plan) *stewardv1.Plan {
			step(p, "publish").GetAction().RetryPolicy.MaxAttempts = 5
			return p
		}, env: &plan.Env{AllowedTools: env.AllowedTools, Tool: toolContracts}, field: "plan.steps[6].action.retry_policy.max_attempts", says: "may only lower it"},
		{name: "no kind", change: func(p *stewardv1.Plan) *stewardv1.Plan { step(p, "check").Kind = nil; return p }, field: "plan.steps[1]", says: "has no kind"},
		{name: "when not bool", change: func(p *stewardv1.Plan) *stewardv1.Plan {
			step(p, "notify").When = "size(steps.fetch.result.items)"
			return p
		}, field: "plan.steps[2].when", says: "evaluates to int, not bool"},
		{name: "expect not bool", change: func(p *stewardv1.Plan) *stewardv1.Plan { step(p, "fetch").Expect = "'yes'"; return p }, field: "plan.steps[0].expect", says: "not bool"},
		{name: "over not a list", change: func(p *stewardv1.Plan) *stewardv1.Plan { step(p, "each").GetForeach().Over = "{'a': 1}"; return p }, field: "plan.steps[3].foreach.over", says: "not list"},
		{name: "target not a string", change: func(p *stewardv1.Plan) *stewardv1.Plan { step(p, "check").GetAction().TargetExpr = "1 + 2"; return p }, field: "plan.steps[1].action.target_expr", says: "not string"},
		{name: "expression does not parse", change: func(p *stewardv1.Plan) *stewardv1.Plan {
			step(p, "notify").When = "steps.fetch.result.notify =="
			return p
		}, field: "plan.steps[2].when", says: "Syntax error"},
		{name: "type error", change: func(p *stewardv1.Plan) *stewardv1.Plan {
			step(p, "notify").When = "steps.fetch.status + 1 == 2"
			return p
		}, field: "plan.steps[2].when", says: "no matching overload"},
		{name: "reads a step it does not depend on", change: func(p *stewardv1.Plan) *stewardv1.Plan {
			step(p, "check").GetAction().ParamExprs["n"] = "steps.notify.result"
			return p
		}, field: `plan.steps[1].action.param_exprs["n"]`, says: "undeclared reference to 'steps.notify.result'"},
		{name: "misspelt result", change: func(p *stewardv1.Plan) *stewardv1.Plan { step(p, "notify").When = "steps.fetch.reslt.notify"; return p }, field: "plan.steps[2].when", says: "undeclared reference"},
		{name: "item outside a foreach", change: func(p *stewardv1.Plan) *stewardv1.Plan {
			step(p, "check").GetAction().TargetExpr = "item.name"
			return p
		}, field: "plan.steps[1].action.target_expr", says: "undeclared reference to 'item'"},
		{name: "result outside expect", change: func(p *stewardv1.Plan) *stewardv1.Plan { step(p, "notify").When = "result.ok"; return p }, field: "plan.steps[2].when", says: "undeclared reference to 'result'"},
		{name: "matches is not offered", change: func(p *stewardv1.Plan) *stewardv1.Plan {
			step(p, "notify").When = "steps.fetch.status.matches('s.*')"
			return p
		}, field: "plan.steps[2].when", says: "undeclared reference to 'matches'"},
		{name: "target twice", change: func(p *stewardv1.Plan) *stewardv1.Plan { step(p, "check").GetAction().Target = "x"; return p }, field: "plan.steps[1].action.target_expr", says: "not both"},
		{name: "param literal and computed", change: func(p *stewardv1.Plan) *stewardv1.Plan {
			step(p, "check").GetAction().Params, _ = structpb.NewStruct(map[string]any{"count": 1})
			return p
		}, field: `plan.steps[1].action.param_exprs["count"]`, says: "literal or computed, not both"},
		{name: "expect on a wait", change: func(p *stewardv1.Plan) *stewardv1.Plan { step(p, "cool_off").Expect = "true"; return p }, field: "plan.steps[5].expect", says: "no result"},
		{name: "wait without an end", change: func(p *stewardv1.Plan) *stewardv1.Plan { step(p, "cool_off").GetWait().Wait = nil; return p }, field: "plan.steps[5].wait", says: "needs until or duration"},
		{name: "negative wait", change: func(p *stewardv1.Plan) *stewardv1.Plan {
			step(p, "cool_off").GetWait().Wait = &stewardv1.WaitStep_Duration{Duration: durationpb.New(-time.Second)}
			return p
		}, field: "plan.steps[5].wait.duration", says: "must be positive"},
		{name: "checkpoint without a question", change: func(p *stewardv1.Plan) *stewardv1.Plan { step(p, "approve").GetCheckpoint().Question = " "; return p }, field: "plan.steps[4].checkpoint.question", says: "is required"},
		{name: "repeated choice", change: func(p *stewardv1.Plan) *stewardv1.Plan {
			step(p, "approve").GetCheckpoint().Choices[1] = "approve"
			return p
		}, field: "plan.steps[4].checkpoint.choices[1]", says: "listed twice"},
		{name: "unknown on_failure", change: func(p *stewardv1.Plan) *stewardv1.Plan { step(p, "fetch").OnFailure = 7; return p }, field: "plan.steps[0].on_failure", says: "not a known value"},
		{name: "too many expressions", change: func(p *stewardv1.Plan) *stewardv1.Plan { return p }, limits: plan.Limits{MaxExprs: 8}, field: "plan.steps[4]", says: "more than 8 expressions"},
		{name: "too many expression bytes", change: func(p *stewardv1.Plan) *stewardv1.Plan {
			for _, s := range p.Steps {
				if a := s.GetAction(); a != nil {
					a.ParamExprs = map[string]string{"padding": "'" + strings.Repeat("x", 1000) + "'"}
					a.Params = nil
				}
			}
			return p
		}, limits: plan.Limits{MaxExprTotalBytes: 1024}, field: "plan.steps[1]", says: "more than 1024 bytes together"},
		{name: "a param JSON cannot hold", change: func(p *stewardv1.Plan) *stewardv1.Plan {
			step(p, "notify").GetAction().Params.Fields["channel"] = structpb.NewNumberValue(math.NaN())
			return p
		}, field: "plan.steps[2].action.params", says: "is not a JSON object"},
		{name: "a param of no kind", change: func(p *stewardv1.Plan) *stewardv1.Plan {
			step(p, "notify").GetAction().Params.Fields["channel"] = &structpb.Value{}
			return p
		}, field: "plan.steps[2].action.params", says: "is not a JSON object"},
		{name: "a sub-task deadline out of range", change: func(p *stewardv1.Plan) *stewardv1.Plan {
			step(p, "check").Kind = &stewardv1.Step_SubTask{SubTask: &stewardv1.SubTaskStep{DelegateRef: "agent:b", Contract: &stewardv1.TaskContract{Deadline: &timestamppb.Timestamp{Seconds: 1 << 60}}}}
			return p
		}, field: "plan.steps[1].sub_task.contract", says: "does not encode as JSON"},
		{name: "foreach without a body", change: func(p *stewardv1.Plan) *stewardv1.Plan { step(p, "each").GetForeach().Body = nil; return p }, field: "plan.steps[3].foreach.body", says: "is required"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := env
			if tt.env != nil {
				e = *tt.env
			}
			err := plan.Validate(tt.change(mustPlan(t, release)), tt.limits, e)
			var pe *errs.Error
			if !errors.As(err, &pe) || pe.Code != errs.Invalid {
				t.Fatalf("got %v, want an Invalid error", err)
			}
			if pe.Field != tt.field || !strings.Contains(pe.Message, tt.says) {
				t.Fatalf("got %q: %q, want %q: …%s…", pe.Field, pe.Message, tt.field, tt.says)
			}
		})
	}
}

// TestValidateTakesATargetAProposalTakes: a literal target is bounded as
// ProposeAction bounds one (MaxTargetBytes), not as a name: a plan can
// say what an agent could propose directly.
func TestValidateTakesATargetAProposalTakes(t *testing.T) {
	p := mustPlan(t, release)
	step(p, "publish").GetAction().Target = "https://example.test/" + strings.Repeat("a", 600)
	if err := plan.Validate(p, plan.Limits{}, env); err != nil {
		t.Fatalf("a 621-byte target: %v", err)
	}
	step(p, "publish").GetAction().Target = strings.Repeat("a", plan.MaxTargetBytes+1)
	var pe *errs.Error
	if err := plan.Validate(p, plan.Limits{}, env); !errors.As(err, &pe) || pe.Field != "plan.steps[6].action.target" {
		t.Fatalf("a target past the limit: %v", err)
	}
}

// TestDefaultLimitsBoundExpressionBytes: at the default limits, a plan
// whose expressions together pass MaxExprTotalBytes is refused before
// any is parsed — 400 expressions of 1,024 bytes cost SubmitPlan about
// 2 s of CPU (issue 27), each within MaxExprs and MaxExprBytes.
func TestDefaultLimitsBoundExpressionBytes(t *testing.T) {
	long := "size([" + strings.Repeat("1,", 505) + "1])"
	p := &stewardv1.Plan{Version: 1, Ending: stewardv1.PlanEnding_PLAN_ENDING_PRODUCE}
	for i := range 100 {
		a := &stewardv1.ActionStep{Tool: "http.get", ParamExprs: map[string]string{}}
		for k := range 4 {
			a.ParamExprs[fmt.Sprintf("p%d", k)] = long
		}
		p.Steps = append(p.Steps, &stewardv1.Step{Id: fmt.Sprintf("s%d", i), Kind: &stewardv1.Step_Action{Action: a}})
	}
	start := time.Now()
	err := plan.Validate(p, plan.Limits{}, env)
	var e *errs.Error
	if !errors.As(err, &e) || e.Field != "plan.steps[4]" || !strings.Contains(e.Message, "bytes together") {
		t.Fatalf("Validate = %v, want plan.steps[4] refused for its expressions' bytes", err)
	}
	if d := time.Since(start); d > 500*time.Millisecond {
		t.Errorf("the refusal took %s: it should come before any expression is parsed", d)
	}
}
