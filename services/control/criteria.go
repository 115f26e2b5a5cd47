package control

// Acceptance criteria are CEL expressions (https://cel.dev) that must
// evaluate to true over the task's result. The environment is kept small,
// so that a criterion reads the same in a year:
//
//	artifacts  map(string, dyn)  the latest version of each artifact, by name:
//	  name, media_type, uri, sha256  string
//	  size, version                  int
//	  action_id                      string ("" when none)
//	  json   the content parsed as JSON when the media type is JSON
//	         (application/json or */*+json) and the content is in Steward's
//	         store; null otherwise (an error if the content is not JSON)
//	  text   the content as a string for text/* in Steward's store; ""
//	         otherwise
//	actions    list(dyn)         the task's actions, in the order proposed:
//	  id, tool, target  string
//	  status            lower-case word: "succeeded", "failed", "denied",
//	                    "awaiting_approval", ... (ActionStatus without its
//	                    prefix)
//	  result            the parsed JSON result of a succeeded action whose
//	                    result is in Steward's results store; null otherwise
//	  compensates       string: the action it undoes, "" when none
//
// JSON numbers are doubles, as in CEL's own JSON mapping; comparing them
// with ints (json.count == 3) works. Only the standard library and its
// macros (has, all, exists, exists_one, map, filter) are available: no
// clock, no randomness, no I/O. Maps iterate in key order, and every
// evaluation is bounded by CriterionCostLimit, so a criterion gives the
// same answer every time it is evaluated over the same result.
//
// An expression must type-check to bool, or to dyn when its value is
// known only at run time; a value that turns out not to be a boolean fails
// the check. An evaluation error (a missing key, a field of null) fails
// the check with the error as its detail: it says what is missing.

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
	"cel.dev/cel-go/common/types/traits"

	"github.com/steward-run/steward/pkg/celvalue"
	"github.com/steward-run/steward/pkg/errs"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// CriterionCostLimit bounds one evaluation of one criterion, in CEL's cost
// units (about one per operation; a string or list function costs in
// proportion to its size). Past it the check fails.
const CriterionCostLimit = 1_000_000

// Limits on a criterion's expression, past which it is refused when the
// task is created, before it is type-checked. Parsing and checking take
// time that grows with nesting, and nested comprehensions multiply the
// work of an evaluation; CriterionCostLimit still bounds each evaluation.
const (
	// MaxCriterionBytes bounds an expression. cel-go's parser makes tens of
	// megabytes of garbage refusing a 4 KiB expression with too many
	// nodes; in 1 KiB there is no room for MaxCriterionNodes, and real
	// criteria are a line or two.
	MaxCriterionBytes = 1024
	// MaxCriterionNesting bounds how deeply an expression nests (calls,
	// operators, parentheses, lists), as cel-go's parser counts it.
	MaxCriterionNesting = 32
	// MaxCriterionNodes bounds the nodes of an expression after its macros
	// (all, exists, map, …) are expanded.
	MaxCriterionNodes = 1024
	// MaxCriterionComprehensions bounds how many comprehensions (all,
	// exists, map, filter, …) an expression nests one inside another.
	MaxCriterionComprehensions = 3
)

// reviewerDecides is the detail of a criterion with no expression: a
// person checks it.
const reviewerDecides = "no expression: the acceptance owner checks this when reviewing"

// checkCriteria checks a contract's acceptance criteria, compiling each
// expression so that a mistake is refused when the task is created rather
// than found when it is produced.
func checkCriteria(cs []*stewardv1.AcceptanceCriterion) error {
	if err := checkList("contract.acceptance_criteria", len(cs)); err != nil {
		return err
	}
	seen := map[string]bool{}
	for i, c := range cs {
		f := fmt.Sprintf("contract.acceptance_criteria[%d]", i)
		if err := checkText(f+".id", c.Id, MaxRefLen, true); err != nil {
			return err
		}
		if seen[c.Id] {
			return errs.Field(f+".id", "%s appears twice", errs.Quote(c.Id))
		}
		seen[c.Id] = true
		if err := checkText(f+".description", c.Description, MaxTextLen, false); err != nil {
			return err
		}
		if err := checkText(f+".expression", c.Expression, MaxCriterionBytes, false); err != nil {
			return err
		}
		if c.Expression == "" {
			if !c.RequiresReviewer {
				return errs.Field(f+".expression", "is required unless requires_reviewer is set: a criterion is either checked by an expression or by a person")
			}
			continue
		}
		if _, err := compileCriterion(c.Expression); err != nil {
			return errs.Field(f+".expression", "%v", err)
		}
	}
	return nil
}

// criteriaEnv is the one CEL environment criteria compile in.
var criteriaEnv = sync.OnceValues(func() (*cel.Env, error) {
	return cel.NewCustomEnv(
		withoutStdMatches(),
		boundedMatches(),
		cel.Variable("artifacts", cel.MapType(cel.StringType, cel.DynType)),
		cel.Variable("actions", cel.ListType(cel.DynType)),
		cel.ParserExpressionSizeLimit(MaxCriterionBytes),
		cel.ParserRecursionLimit(MaxCriterionNesting),
		cel.ExpressionNodeLimit(MaxCriterionNodes),
		cel.ASTValidators(cel.ValidateComprehensionNestingLimit(MaxCriterionComprehensions)),
	)
})

// maxCachedPrograms bounds the program cache: expressions come from
// clients, and a busy plane should not keep every one it has seen.
const maxCachedPrograms = 1024

// programCache keeps compiled criteria by expression, one per plane. CEL
// programs are safe for concurrent use, so one compilation serves every
// task.
type programCache struct {
	mu sync.Mutex
	m  map[string]cel.Program
}

func newProgramCache() *programCache { return &programCache{m: map[string]cel.Program{}} }

// compile is compileCriterion, kept; a nil cache compiles every time.
func (c *programCache) compile(expr string) (cel.Program, error) {
	if c == nil {
		return compileCriterion(expr)
	}
	c.mu.Lock()
	prg, ok := c.m[expr]
	c.mu.Unlock()
	if ok {
		return prg, nil
	}
	prg, err := compileCriterion(expr)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.m) >= maxCachedPrograms {
		for k := range c.m { // drop any one; compiling again is cheap
			delete(c.m, k)
			break
		}
	}
	c.m[expr] = prg
	return prg, nil
}

// compileCriterion compiles expr into a program, or returns CEL's message
// saying why it cannot.
func compileCriterion(expr string) (cel.Program, error) {
	env, err := criteriaEnv()
	if err != nil {
		return nil, err
	}
	ast, iss := env.Compile(expr)
	if iss.Err() != nil {
		return nil, iss.Err()
	}
	if t := ast.OutputType(); !t.IsExactType(cel.BoolType) && !t.IsExactType(cel.DynType) {
		return nil, fmt.Errorf("evaluates to %s, not bool", t)
	}
	return env.Program(ast, cel.CostLimit(CriterionCostLimit), cel.InterruptCheckFrequency(1), matchCost(), celvalue.ScanCost())
}

// MaxCriterionTime bounds the evaluation of one criterion, beyond its cost
// limit: a criterion still running then fails, saying so.
const MaxCriterionTime = 500 * time.Millisecond

// MaxCriteriaTime bounds the evaluation of all of a task's criteria: a
// round is recorded in about this much CPU at most.
const MaxCriteriaTime = time.Second

// evaluateCriteria evaluates each criterion over vars (see gather). A
// criterion that cannot be compiled or evaluated fails with the reason as
// its detail; only a cancelled ctx stops the evaluation as a whole.
func evaluateCriteria(ctx context.Context, cs []*stewardv1.AcceptanceCriterion, vars map[string]any) ([]*stewardv1.CriterionResult, error) {
	return (*programCache)(nil).evaluate(ctx, cs, vars)
}

// evaluate is evaluateCriteria with the programs kept in programs.
func (programs *programCache) evaluate(ctx context.Context, cs []*stewardv1.AcceptanceCriterion, vars map[string]any) ([]*stewardv1.CriterionResult, error) {
	out := make([]*stewardv1.CriterionResult, 0, len(cs))
	// The real clock, not the plane's: this bounds work done now, as the
	// contexts below do, not a time the task records.
	deadline := time.Now().Add(MaxCriteriaTime)
	for _, c := range cs {
		r := &stewardv1.CriterionResult{CriterionId: c.Id, Expression: c.Expression}
		out = append(out, r)
		if c.Expression == "" {
			r.Passed, r.Detail = true, reviewerDecides
			continue
		}
		prg, err := programs.compile(c.Expression)
		if err != nil {
			r.Detail = uncompiledCriterion(err)
			continue
		}
		// The cost limit bounds what CEL counts; the deadline bounds the
		// rest (a scan CEL prices as one step), checked at every
		// comprehension step: checked every 100, a deadline overran by
		// 100 scans of a long list (0.7 s under -race).
		left := min(MaxCriterionTime, time.Until(deadline))
		if left <= 0 {
			r.Detail = fmt.Sprintf("not evaluated: the criteria took longer than %s together", MaxCriteriaTime)
			continue
		}
		evalCtx, cancel := context.WithTimeout(ctx, left)
		v, _, err := prg.ContextEval(evalCtx, vars)
		cancel()
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if errors.Is(evalCtx.Err(), context.DeadlineExceeded) {
			err = fmt.Errorf("took longer than %s to evaluate", left.Round(time.Millisecond))
		}
		switch b, ok := v.(types.Bool); {
		case err != nil:
			r.Detail = clipTo(err.Error(), MaxReasonLen)
		case !ok:
			r.Detail = fmt.Sprintf("evaluated to %s, not true or false", describe(v))
		case !bool(b):
			r.Detail = "evaluated to false"
		default:
			r.Passed = true
		}
	}
	return out, nil
}

// describe names a CEL value for a detail, briefly.
func describe(v ref.Val) string {
	switch v := v.(type) {
	case types.String:
		return fmt.Sprintf("%q (a string)", clipTo(string(v), 64))
	case types.Null:
		return "null"
	case traits.Lister, traits.Mapper:
		return "a " + v.Type().TypeName()
	}
	return fmt.Sprintf("%v (%s)", v.Value(), v.Type().TypeName())
}

// clipTo cuts s to at most n bytes on a rune boundary. Details are recorded
// in events, and an error can quote content: a key looked up, a value.
func clipTo(s string, n int) string { return errs.Cut(s, n) }

// artifactValue is one artifact as criteria see it; json and text are nil
// when its content is not read (see gather).
func artifactValue(a *stewardv1.Artifact, json, text ref.Val) ref.Val {
	if json == nil {
		json = types.NullValue
	}
	if text == nil {
		text = types.String("")
	}
	return celvalue.Object(map[string]ref.Val{
		"name":       types.String(a.Name),
		"media_type": types.String(a.MediaType),
		"uri":        types.String(a.Uri),
		"sha256":     types.String(a.Sha256),
		"size":       types.Int(a.SizeBytes),
		"version":    types.Int(a.Version),
		"action_id":  types.String(a.ActionId),
		"json":       json,
		"text":       text,
	})
}

// actionValue is one action as criteria see it; result is nil when there
// is none to read.
func actionValue(a *stewardv1.Action, result ref.Val) ref.Val {
	if result == nil {
		result = types.NullValue
	}
	return celvalue.Object(map[string]ref.Val{
		"id":          types.String(a.ActionId),
		"tool":        types.String(a.Tool),
		"target":      types.String(a.Target),
		"status":      types.String(actionStatusWord(a.Status)),
		"result":      result,
		"compensates": types.String(a.Compensates),
	})
}

// actionStatusWord is the status as criteria compare it: "succeeded",
// "awaiting_approval".
func actionStatusWord(s stewardv1.ActionStatus) string {
	return strings.ToLower(strings.TrimPrefix(s.String(), "ACTION_STATUS_"))
}
