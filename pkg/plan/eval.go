package plan

import (
	"context"
	"fmt"
	"math"
	"reflect"

	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
	"cel.dev/cel-go/common/types/traits"
	"google.golang.org/protobuf/types/known/structpb"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// The Eval functions evaluate one step's expressions over the outcomes of
// earlier steps, for a plan that Validate accepted. Each compiles the
// expression in the step's scope, so a plan is evaluated as it was
// checked; each evaluation is bounded by CostLimit and MaxEvalTime. An
// error names the field (plan.steps[i].when) and says why: a missing
// outcome, a value of the wrong type, a key that is not there. For the
// runtime such an error fails the step.

// EvalWhen reports whether step id should run: its when, or true when it
// has none.
func EvalWhen(ctx context.Context, p *stewardv1.Plan, id string, b Bindings) (bool, error) {
	st, err := locate(p, id)
	if err != nil {
		return false, err
	}
	return st.boolean(ctx, ".when", st.step.When, st.scope, b)
}

// EvalExpect reports whether step id's result, b.Result (and for a
// foreach, each item's result with b.Item), meets its expect; true when
// it has none.
func EvalExpect(ctx context.Context, p *stewardv1.Plan, id string, b Bindings) (bool, error) {
	st, err := locate(p, id)
	if err != nil {
		return false, err
	}
	sc := st.scope
	sc.result = true
	sc.item = st.step.GetForeach() != nil
	return st.boolean(ctx, ".expect", st.step.Expect, sc, b)
}

// EvalForeach returns the items foreach step id runs over: its over, as
// JSON values. A list longer than max_items is an error: a foreach is
// bounded, and cutting the list would hide work left undone.
func EvalForeach(ctx context.Context, p *stewardv1.Plan, id string, b Bindings) ([]any, error) {
	st, err := locate(p, id)
	if err != nil {
		return nil, err
	}
	f := st.step.GetForeach()
	if f == nil {
		return nil, fmt.Errorf("%s: step %s is not a foreach", st.field, id)
	}
	field := st.field + ".foreach.over"
	v, err := eval(ctx, st.scope, f.Over, wantList, b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", field, err)
	}
	l, ok := v.(traits.Lister)
	if !ok {
		return nil, fmt.Errorf("%s: evaluated to %s, not a list", field, v.Type().TypeName())
	}
	if n := l.Size().(types.Int); int64(n) > int64(f.MaxItems) {
		return nil, fmt.Errorf("%s: the list has %d items; max_items is %d", field, n, f.MaxItems)
	}
	out, err := toJSON(v)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", field, err)
	}
	items, _ := out.([]any)
	return items, nil
}

// EvalParams returns the target and parameters of step id's action — of
// its body's, for a foreach, with b.Item as the item: the literal params
// with the computed param_exprs added.
func EvalParams(ctx context.Context, p *stewardv1.Plan, id string, b Bindings) (target string, params map[string]any, err error) {
	st, err := locate(p, id)
	if err != nil {
		return "", nil, err
	}
	a, field, sc := st.step.GetAction(), st.field+".action", st.scope
	if f := st.step.GetForeach(); f != nil {
		a, field = f.GetBody().GetAction(), st.field+".foreach.body.action"
		sc.item = true
	}
	if a == nil {
		return "", nil, fmt.Errorf("%s: step %s has no action", st.field, id)
	}
	target = a.Target
	if a.TargetExpr != "" {
		v, err := eval(ctx, sc, a.TargetExpr, wantString, b)
		if err != nil {
			return "", nil, fmt.Errorf("%s.target_expr: %w", field, err)
		}
		s, ok := v.(types.String)
		if !ok {
			return "", nil, fmt.Errorf("%s.target_expr: evaluated to %s, not a string", field, v.Type().TypeName())
		}
		target = string(s)
	}
	params = a.Params.AsMap()
	for _, name := range sorted(keys(a.ParamExprs)) {
		f := fmt.Sprintf("%s.param_exprs[%q]", field, name)
		v, err := eval(ctx, sc, a.ParamExprs[name], wantAny, b)
		if err != nil {
			return "", nil, fmt.Errorf("%s: %w", f, err)
		}
		if params[name], err = toJSON(v); err != nil {
			return "", nil, fmt.Errorf("%s: %w", f, err)
		}
	}
	return target, params, nil
}

// located is one step of a plan with what its expressions may read.
type located struct {
	step  *stewardv1.Step
	field string
	scope scope
}

// unbounded checks a plan's shape without its limits: the Eval functions
// take a plan Validate accepted, under whatever limits it was given.
var unbounded = Limits{MaxSteps: math.MaxInt, MaxFanOut: math.MaxInt, MaxDepth: math.MaxInt}

// locate finds step id in p and its scope.
func locate(p *stewardv1.Plan, id string) (located, error) {
	g, err := newGraph(p, unbounded.orDefault())
	if err != nil {
		return located{}, err
	}
	i, ok := g.index[id]
	if !ok {
		return located{}, fmt.Errorf("plan has no step %q", id)
	}
	return located{step: p.Steps[i], field: fmt.Sprintf("plan.steps[%d]", i), scope: g.scope(i)}, nil
}

// boolean evaluates an optional condition: true when there is none.
func (st located) boolean(ctx context.Context, name, expr string, sc scope, b Bindings) (bool, error) {
	if expr == "" {
		return true, nil
	}
	v, err := eval(ctx, sc, expr, wantBool, b)
	if err != nil {
		return false, fmt.Errorf("%s%s: %w", st.field, name, err)
	}
	ok, isBool := v.(types.Bool)
	if !isBool {
		return false, fmt.Errorf("%s%s: evaluated to %s, not true or false", st.field, name, v.Type().TypeName())
	}
	return bool(ok), nil
}

// jsonType is what toJSON converts CEL values into.
var jsonType = reflect.TypeFor[*structpb.Value]()

// toJSON turns a CEL value into a JSON value as encoding/json decodes one.
// A number JSON cannot hold (1.0/0.0, NaN) is an error: structpb would
// hand it on as the string "Infinity", and a tool would get a string
// where the plan computed a number.
func toJSON(v ref.Val) (any, error) {
	n, err := v.ConvertToNative(jsonType)
	if err != nil {
		return nil, fmt.Errorf("%s is not a JSON value: %w", v.Type().TypeName(), err)
	}
	j := n.(*structpb.Value)
	if f, ok := nonFinite(j); ok {
		return nil, fmt.Errorf("%v is not a JSON number", f)
	}
	return j.AsInterface(), nil
}

// nonFinite returns a NaN or infinite number inside v, if any.
func nonFinite(v *structpb.Value) (float64, bool) {
	switch k := v.GetKind().(type) {
	case *structpb.Value_NumberValue:
		if math.IsNaN(k.NumberValue) || math.IsInf(k.NumberValue, 0) {
			return k.NumberValue, true
		}
	case *structpb.Value_ListValue:
		for _, e := range k.ListValue.GetValues() {
			if f, ok := nonFinite(e); ok {
				return f, true
			}
		}
	case *structpb.Value_StructValue:
		for _, e := range k.StructValue.GetFields() {
			if f, ok := nonFinite(e); ok {
				return f, true
			}
		}
	}
	return 0, false
}
