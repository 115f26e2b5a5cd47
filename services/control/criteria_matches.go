package control

import (
	"regexp"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/cost"
	"cel.dev/cel-go/common/env"
	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"

	"github.com/steward-run/steward/pkg/action"
)

// CEL's own matches runs Go's regular expressions to the end before its
// cost is counted, and a regular expression cannot be stopped: one call on
// a 512 KiB artifact took 16 s of CPU. Criteria get a matches of their own
// that measures the work first (a text's length times the pattern's
// compiled size) and refuses a call past MaxMatchWork, and counts what it
// did towards the criterion's cost limit.

// MaxMatchWork bounds one matches call, in text bytes times pattern
// instructions: about 40 ms.
const MaxMatchWork = 4 * CriterionCostLimit

// matchBytesPerCost is how much matching work costs one unit of
// CriterionCostLimit.
const matchBytesPerCost = 4

// Overload ids of the bounded matches.
const (
	matchesGlobal = "steward_matches_string"
	matchesMember = "steward_string_matches_string"
)

// withoutStdMatches is CEL's standard library less its matches.
func withoutStdMatches() cel.EnvOption {
	return cel.StdLib(cel.StdLibSubset(&env.LibrarySubset{ExcludeFunctions: []*env.Function{{Name: "matches"}}}))
}

// boundedMatches declares matches(text, pattern) and text.matches(pattern).
func boundedMatches() cel.EnvOption {
	return cel.Function("matches",
		cel.Overload(matchesGlobal, []*cel.Type{cel.StringType, cel.StringType}, cel.BoolType, cel.BinaryBinding(match)),
		cel.MemberOverload(matchesMember, []*cel.Type{cel.StringType, cel.StringType}, cel.BoolType, cel.BinaryBinding(match)))
}

// matchCost counts a call's work towards the cost limit.
func matchCost() cel.ProgramOption {
	track := func(args []ref.Val, _ ref.Val) *uint64 {
		c := uint64(1)
		if text, pattern, ok := strings2(args); ok {
			if insts, err := action.PatternInsts(pattern); err == nil {
				c += uint64(len(text)*insts) / matchBytesPerCost
			}
		}
		return &c
	}
	return cel.CostTrackerOptions(cost.OverloadTracker(matchesGlobal, track), cost.OverloadTracker(matchesMember, track))
}

func strings2(args []ref.Val) (string, string, bool) {
	if len(args) != 2 {
		return "", "", false
	}
	a, ok1 := args[0].(types.String)
	b, ok2 := args[1].(types.String)
	return string(a), string(b), ok1 && ok2
}

func match(text, pattern ref.Val) ref.Val {
	t, p, ok := strings2([]ref.Val{text, pattern})
	if !ok {
		return types.MaybeNoSuchOverloadErr(pattern)
	}
	insts, err := action.PatternInsts(p)
	if err != nil {
		return types.NewErr("matches: %v", err)
	}
	if work := len(t) * insts; work > MaxMatchWork {
		return types.NewErr("matches: a text of %d bytes against a pattern of %d instructions is %d units of work; the limit is %d", len(t), insts, work, MaxMatchWork)
	}
	re, err := regexp.Compile(p)
	if err != nil {
		return types.NewErr("matches: %v", err)
	}
	return types.Bool(re.MatchString(t))
}
