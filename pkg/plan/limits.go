package plan

import "time"

// Limits bound a plan, so that checking it, folding its state and running
// it stay cheap whatever an agent writes. A zero field means its default.
type Limits struct {
	// MaxSteps bounds the steps of a plan.
	MaxSteps int
	// MaxFanOut bounds how many steps may depend directly on one step.
	MaxFanOut int
	// MaxForeachItems bounds a foreach's max_items.
	MaxForeachItems int
	// MaxDepth bounds the longest chain of dependencies, counted in steps:
	// a step with no dependencies is at depth 1.
	MaxDepth int
	// MaxExprBytes bounds each CEL expression.
	MaxExprBytes int
	// MaxParamExprs bounds the computed parameters of one action.
	MaxParamExprs int
	// MaxExprs bounds the expressions of a whole plan: each is parsed and
	// type-checked when the plan is validated. 100 steps of 35
	// expressions took 1 s.
	MaxExprs int
	// MaxExprTotalBytes bounds the bytes of all a plan's expressions
	// together. Parsing costs by the byte (CEL's ANTLR parser: about
	// 5 µs of CPU a byte for a list of small literals, GC included), so
	// MaxExprs expressions of MaxExprBytes each cost 2 s; under this
	// bound a plan at every limit costs SubmitPlan about 0.1 s
	// (docs/plans.md, e2e BenchmarkSubmitPlanAtLimits).
	MaxExprTotalBytes int
	// MaxWait bounds a wait's duration.
	MaxWait time.Duration
}

// DefaultLimits are the limits a zero Limits stands for.
var DefaultLimits = Limits{
	MaxSteps:          100,
	MaxFanOut:         32,
	MaxForeachItems:   100,
	MaxDepth:          32,
	MaxExprBytes:      1024,
	MaxParamExprs:     32,
	MaxExprs:          400,
	MaxExprTotalBytes: 16 << 10,
	MaxWait:           30 * 24 * time.Hour,
}

// orDefault fills l's zero fields from DefaultLimits.
func (l Limits) orDefault() Limits {
	d := DefaultLimits
	pick := func(v, def int) int {
		if v > 0 {
			return v
		}
		return def
	}
	l.MaxSteps = pick(l.MaxSteps, d.MaxSteps)
	l.MaxFanOut = pick(l.MaxFanOut, d.MaxFanOut)
	l.MaxForeachItems = pick(l.MaxForeachItems, d.MaxForeachItems)
	l.MaxDepth = pick(l.MaxDepth, d.MaxDepth)
	l.MaxExprBytes = pick(l.MaxExprBytes, d.MaxExprBytes)
	l.MaxParamExprs = pick(l.MaxParamExprs, d.MaxParamExprs)
	l.MaxExprs = pick(l.MaxExprs, d.MaxExprs)
	l.MaxExprTotalBytes = pick(l.MaxExprTotalBytes, d.MaxExprTotalBytes)
	if l.MaxWait <= 0 {
		l.MaxWait = d.MaxWait
	}
	return l
}
