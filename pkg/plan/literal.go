package plan

import (
	"sync"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/ast"
	"cel.dev/cel-go/common/operators"
	"cel.dev/cel-go/common/types"
)

// macroFree parses expressions as written: without macros, whose
// expansions add literals of their own (exists' false, exists_one's 0).
var macroFree = sync.OnceValues(func() (*cel.Env, error) {
	return cel.NewCustomEnv(cel.ClearMacros(),
		cel.ParserExpressionSizeLimit(maxExprParseBytes), cel.ParserRecursionLimit(maxExprNesting))
})

// QuotesLiteral reports whether expr holds a literal that may be part of
// what it evaluates to: a string, bytes or number written in it, outside
// the places whose value is never the literal's (an index, a comparison,
// a membership test, a ternary's condition, startsWith/endsWith/contains).
// A literal true, false or null counts for nothing. A computed parameter
// the tool marks secret must not quote one: the plan would hold in clear
// part of a value Steward conceals everywhere else (docs/secrets.md).
func QuotesLiteral(expr string) (bool, error) {
	e, err := macroFree()
	if err != nil {
		return false, err
	}
	parsed, iss := e.Parse(expr)
	if iss.Err() != nil {
		return false, iss.Err()
	}
	return quotes(parsed.NativeRep().Expr(), false), nil
}

// quotes walks x; safe says its value cannot flow into its parent's.
func quotes(x ast.Expr, safe bool) bool {
	switch x.Kind() {
	case ast.LiteralKind:
		switch x.AsLiteral().Type() {
		case types.BoolType, types.NullType:
			return false
		}
		return !safe
	case ast.SelectKind:
		return quotes(x.AsSelect().Operand(), false)
	case ast.ListKind:
		return anyQuotes(x.AsList().Elements(), nil)
	case ast.MapKind:
		for _, en := range x.AsMap().Entries() {
			if quotes(en.AsMapEntry().Key(), false) || quotes(en.AsMapEntry().Value(), false) {
				return true
			}
		}
	case ast.StructKind:
		for _, f := range x.AsStruct().Fields() {
			if quotes(f.AsStructField().Value(), false) {
				return true
			}
		}
	case ast.ComprehensionKind: // not without macros; walked all the same
		c := x.AsComprehension()
		return anyQuotes([]ast.Expr{c.IterRange(), c.AccuInit(), c.LoopCondition(), c.LoopStep(), c.Result()}, nil)
	case ast.CallKind:
		c := x.AsCall()
		safe := safeArgs(c.FunctionName(), len(c.Args())+1)
		if c.IsMemberFunction() && quotes(c.Target(), safe[0]) {
			return true
		}
		return anyQuotes(c.Args(), safe[1:])
	}
	return false
}

// safeArgs says which of the n operands of a call to fn (its target
// first, then its arguments) never flow into its value.
func safeArgs(fn string, n int) []bool {
	safe := make([]bool, n)
	switch fn {
	case operators.Index, operators.OptIndex:
		safe[n-1] = n > 2 // the key: the value is what it finds
	case operators.Equals, operators.NotEquals, operators.Less, operators.LessEquals,
		operators.Greater, operators.GreaterEquals, operators.In, operators.OldIn,
		"startsWith", "endsWith", "contains":
		for i := range safe {
			safe[i] = true
		}
	case operators.Conditional:
		safe[1] = n > 1
	}
	return safe
}

func anyQuotes(xs []ast.Expr, safe []bool) bool {
	for i, x := range xs {
		if quotes(x, safe != nil && safe[i]) {
			return true
		}
	}
	return false
}
