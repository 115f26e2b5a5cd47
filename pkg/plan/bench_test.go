package plan_test

import (
	"fmt"
	"testing"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/plan"
)

// widest is a plan at the default limits' edge: 100 steps in chains of
// 32, and 400 expressions, each reading the step before.
func widest() *stewardv1.Plan {
	l := plan.DefaultLimits
	p := &stewardv1.Plan{Version: 1, Ending: stewardv1.PlanEnding_PLAN_ENDING_PRODUCE}
	exprs := 0
	for i := range l.MaxSteps {
		a := &stewardv1.ActionStep{Tool: "http.get", ParamExprs: map[string]string{}}
		s := &stewardv1.Step{Id: fmt.Sprintf("s%d", i), Kind: &stewardv1.Step_Action{Action: a}}
		p.Steps = append(p.Steps, s)
		if i%l.MaxDepth == 0 {
			continue
		}
		prev := fmt.Sprintf("steps.s%d", i-1)
		s.DependsOn = []string{fmt.Sprintf("s%d", i-1)}
		s.When = prev + ".status == 'succeeded' && " + prev + ".result.ok == true"
		a.TargetExpr = prev + ".result.name + '/x'"
		exprs += 2
		for k := 0; k < 2 && exprs < l.MaxExprs; k++ {
			a.ParamExprs[fmt.Sprintf("p%d", k)] = fmt.Sprintf("%s.result.items.map(x, x.v + %d)", prev, k)
			exprs++
		}
	}
	return p
}

// BenchmarkValidateWidest measures the most a plan at the default limits
// can ask of Validate.
func BenchmarkValidateWidest(b *testing.B) {
	p := widest()
	if err := plan.Validate(p, plan.Limits{}, env); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		_ = plan.Validate(p, plan.Limits{}, env)
	}
}
