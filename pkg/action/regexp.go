package action

import (
	"fmt"
	"regexp"
	"regexp/syntax"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Regular expressions in schemas ("pattern", the keys of
// "patternProperties") and values checked as format "regex" are bounded:
// Go's engine never backtracks, but matching costs the text's length times
// the compiled program's size, and compiling costs the program's size.
const (
	// MaxPatternBytes bounds a regular expression's text.
	MaxPatternBytes = 1024
	// MaxPatternInsts bounds a regular expression's compiled program, in
	// instructions: [a-z]{1000} is about 1,000, ^\S{1,500}$ about 1,000,
	// the long IPv6 pattern about 700.
	MaxPatternInsts = 2000
	// patternBytesPerStep is how many text bytes times instructions cost
	// about as much as one step of MaxValidationSteps.
	patternBytesPerStep = 256
)

// PatternInsts measures a regular expression against MaxPatternBytes and
// MaxPatternInsts: its compiled size in instructions, or why it is refused.
// Matching costs a text's length times this.
func PatternInsts(expr string) (int, error) {
	if len(expr) > MaxPatternBytes {
		return 0, fmt.Errorf("regular expression is longer than %d bytes", MaxPatternBytes)
	}
	re, err := syntax.Parse(expr, syntax.Perl)
	if err != nil {
		return 0, err
	}
	prog, err := syntax.Compile(re.Simplify())
	if err != nil {
		return 0, err
	}
	if n := len(prog.Inst); n > MaxPatternInsts {
		return 0, fmt.Errorf("regular expression compiles to %d instructions; the limit is %d", n, MaxPatternInsts)
	}
	return len(prog.Inst), nil
}

// boundedRegexp is the schema library's regular expression engine:
// Go's, for expressions within the limits above.
func boundedRegexp(expr string) (jsonschema.Regexp, error) {
	if _, err := PatternInsts(expr); err != nil {
		return nil, err
	}
	return regexp.Compile(expr)
}
