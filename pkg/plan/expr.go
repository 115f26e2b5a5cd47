package plan

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/env"
	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"

	"github.com/steward-run/steward/pkg/celvalue"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// A step's expressions see, for each step it depends on directly or
// through others:
//
//	steps.<id>.result  dyn     its result as JSON: an action's result, a
//	                           checkpoint's answer, a foreach's list of
//	                           its items' results, null when skipped
//	steps.<id>.status  string  "succeeded", "skipped", or "failed" (for a
//	                           step whose on_failure is continue)
//
// and, where they apply, item (dyn: the foreach item, in a foreach's body
// and expect) and result (dyn: the step's own result, in expect). Each
// steps.<id>.* is a variable of its own, so a reference to a step outside
// the closure, or a misspelt field, is an undeclared reference when the
// plan is checked, not an error when it runs.
//
// Only CEL's standard library is available, less matches: a regular
// expression's work cannot be bounded before it runs (criteria have a
// bounded one; plans can add it when a plan needs it). No clock, no
// randomness, no I/O; maps iterate in key order.

// Limits on an expression's shape, as for acceptance criteria (see
// services/control/criteria.go): parsing and checking take time that grows
// with nesting, and nested comprehensions multiply an evaluation's work.
const (
	maxExprNesting        = 32
	maxExprNodes          = 1024
	maxExprComprehensions = 3
	// maxExprParseBytes is the parser's own bound; Limits.MaxExprBytes,
	// checked first, is lower unless a caller raised it.
	maxExprParseBytes = 16 << 10
)

// CostLimit bounds one evaluation of one expression, in CEL's cost units
// (about one per operation; a string or list function costs in proportion
// to its size). Past it the evaluation fails.
const CostLimit = 1_000_000

// MaxEvalTime bounds one evaluation beyond its cost limit: it bounds the
// work CEL prices as one step.
const MaxEvalTime = 500 * time.Millisecond

// baseEnv is the environment every plan expression compiles in, before
// the variables of its step are declared.
var baseEnv = sync.OnceValues(func() (*cel.Env, error) {
	return cel.NewCustomEnv(
		cel.StdLib(cel.StdLibSubset(&env.LibrarySubset{ExcludeFunctions: []*env.Function{{Name: "matches"}}})),
		cel.ParserExpressionSizeLimit(maxExprParseBytes),
		cel.ParserRecursionLimit(maxExprNesting),
		cel.ExpressionNodeLimit(maxExprNodes),
		cel.ASTValidators(cel.ValidateComprehensionNestingLimit(maxExprComprehensions)),
	)
})

// scope is what one expression may refer to.
type scope struct {
	steps  []string // ids of the steps it may read, sorted
	item   bool     // inside a foreach
	result bool     // an expect
	// envs, if set, keeps the environments built for one step's scopes
	// (by item, result), shared by its copies: a step's expressions are
	// checked in one, not each in a new one of up to 2 × MaxSteps
	// variables.
	envs map[[2]bool]*cel.Env
}

// env declares s's variables on top of baseEnv.
func (s scope) env() (*cel.Env, error) {
	key := [2]bool{s.item, s.result}
	if e := s.envs[key]; e != nil {
		return e, nil
	}
	e, err := s.declare()
	if err == nil && s.envs != nil {
		s.envs[key] = e
	}
	return e, err
}

// declare builds s's environment.
func (s scope) declare() (*cel.Env, error) {
	base, err := baseEnv()
	if err != nil {
		return nil, err
	}
	opts := make([]cel.EnvOption, 0, 2*len(s.steps)+2)
	for _, id := range s.steps {
		opts = append(opts,
			cel.Variable(resultVar(id), cel.DynType),
			cel.Variable(statusVar(id), cel.StringType))
	}
	if s.item {
		opts = append(opts, cel.Variable("item", cel.DynType))
	}
	if s.result {
		opts = append(opts, cel.Variable("result", cel.DynType))
	}
	return base.Extend(opts...)
}

func resultVar(id string) string { return "steps." + id + ".result" }
func statusVar(id string) string { return "steps." + id + ".status" }

// want is the type an expression must check to; dyn is always accepted,
// and its value checked when evaluated.
type want int

const (
	wantAny want = iota
	wantBool
	wantString
	wantList
)

func (w want) String() string {
	return [...]string{"any value", "bool", "string", "list"}[w]
}

func (w want) accepts(t *cel.Type) bool {
	if t.IsExactType(cel.DynType) || w == wantAny {
		return true
	}
	switch w {
	case wantBool:
		return t.IsExactType(cel.BoolType)
	case wantString:
		return t.IsExactType(cel.StringType)
	case wantList:
		return t.Kind() == types.ListKind
	}
	return false
}

// check parses and type-checks expr in s, as w.
func check(s scope, expr string, w want) (*cel.Env, *cel.Ast, error) {
	e, err := s.env()
	if err != nil {
		return nil, nil, err
	}
	ast, iss := e.Compile(expr)
	if iss.Err() != nil {
		return nil, nil, iss.Err()
	}
	if t := ast.OutputType(); !w.accepts(t) {
		return nil, nil, fmt.Errorf("evaluates to %s, not %s", t, w)
	}
	return e, ast, nil
}

// compile checks expr (see check) and makes it a program, bounded in cost.
func compile(s scope, expr string, w want) (cel.Program, error) {
	e, ast, err := check(s, expr, w)
	if err != nil {
		return nil, err
	}
	return e.Program(ast, cel.CostLimit(CostLimit), cel.InterruptCheckFrequency(1), celvalue.ScanCost())
}

// Outcome is what one earlier step gave, as the Eval functions read it.
type Outcome struct {
	Status stewardv1.StepStatus
	// Result is the step's result as encoding/json decodes it into an any
	// (float64 numbers, map[string]any objects); nil for null.
	Result any
}

// Bindings are the values an expression is evaluated over.
type Bindings struct {
	// Steps holds the outcomes of earlier steps by id; those the step may
	// read must be there.
	Steps map[string]Outcome
	// Item is the foreach item, for a foreach's body and expect.
	Item any
	// Result is the step's own result, for its expect.
	Result any
}

// eval compiles expr in s and evaluates it over b. A missing step
// outcome, a cost past CostLimit or an evaluation past MaxEvalTime is an
// error.
func eval(ctx context.Context, s scope, expr string, w want, b Bindings) (ref.Val, error) {
	prg, err := compile(s, expr, w)
	if err != nil {
		return nil, err
	}
	vars := make(map[string]any, 2*len(s.steps)+2)
	for _, id := range s.steps {
		o, ok := b.Steps[id]
		if !ok {
			return nil, fmt.Errorf("step %s has no outcome yet", id)
		}
		vars[resultVar(id)] = celvalue.FromJSON(o.Result)
		vars[statusVar(id)] = StatusWord(o.Status)
	}
	if s.item {
		vars["item"] = celvalue.FromJSON(b.Item)
	}
	if s.result {
		vars["result"] = celvalue.FromJSON(b.Result)
	}
	evalCtx, cancel := context.WithTimeout(ctx, MaxEvalTime)
	defer cancel()
	v, _, err := prg.ContextEval(evalCtx, vars)
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	if errors.Is(evalCtx.Err(), context.DeadlineExceeded) {
		return nil, fmt.Errorf("took longer than %s to evaluate", MaxEvalTime)
	}
	if err != nil {
		return nil, err
	}
	return v, nil
}

// StatusWord is a step status as expressions compare it: "succeeded",
// "skipped" (StepStatus without its prefix, in lower case).
func StatusWord(s stewardv1.StepStatus) string {
	return strings.ToLower(strings.TrimPrefix(s.String(), "STEP_STATUS_"))
}

// sorted returns the keys of set in order.
func sorted(set map[string]bool) []string {
	out := make([]string, 0, len(set))
	for k := range set {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
