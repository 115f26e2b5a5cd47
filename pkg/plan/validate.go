package plan

import (
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/steward-run/steward/pkg/errs"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// Env is what Validate needs to know about the task a plan is for.
type Env struct {
	// AllowedTools are the tools the task may call: its contract's
	// allowed_tools narrowed by its credential, as entries of
	// pkg/toolpin (a bare name for any version, name@version for one).
	AllowedTools []string
	// Tool returns the contract of the tool a step names, version "" for
	// the version the task would call, or an error saying why there is
	// none. Nil: tools are checked against AllowedTools only, and a
	// step's retry policy is not compared with its tool's.
	Tool func(name, version string) (*stewardv1.ToolContract, error)
}

// MaxIDBytes bounds a step id.
const MaxIDBytes = 64

// MaxTargetBytes bounds an action's literal target, as ProposeAction
// bounds a proposal's (services/control.MaxTargetLen is this).
const MaxTargetBytes = 1024

// Bounds on a step's free text, as for the RPCs they mirror.
const (
	maxRefBytes      = 256  // milestone ids, refs, tool names, parameter names
	maxQuestionBytes = 4096 // RequestInputRequest.question
	maxChoices       = 32
	maxChoiceBytes   = 256
)

// identifier is a step id: a CEL identifier, so that steps.<id> reads.
var identifier = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// reserved are CEL's reserved words, which cannot follow a dot.
var reserved = map[string]bool{
	"false": true, "in": true, "null": true, "true": true,
	"as": true, "break": true, "const": true, "continue": true, "else": true,
	"for": true, "function": true, "if": true, "import": true, "let": true,
	"loop": true, "package": true, "namespace": true, "return": true,
	"var": true, "void": true, "while": true,
}

// Validate checks p before anything runs: its shape (ids, dependencies,
// no cycle), its limits, each step's kind and tools against env, and each
// expression, type-checked in the scope of the step it belongs to. The
// first problem is returned as an errs.Invalid error naming the field as
// plan.steps[i].<field>.
func Validate(p *stewardv1.Plan, l Limits, env Env) error {
	l = l.orDefault()
	if p == nil {
		return errs.Field("plan", "is required")
	}
	if p.Version == 0 {
		return errs.Field("plan.version", "is required: 1 for a first plan, higher for each revision")
	}
	if _, ok := stewardv1.PlanEnding_name[int32(p.Ending)]; !ok || p.Ending == stewardv1.PlanEnding_PLAN_ENDING_UNSPECIFIED {
		return errs.Field("plan.ending", "is required (PLAN_ENDING_PRODUCE or PLAN_ENDING_HAND_BACK)")
	}
	if len(p.Steps) == 0 {
		return errs.Field("plan.steps", "is required: a plan has at least one step")
	}
	if len(p.Steps) > l.MaxSteps {
		return errs.Field("plan.steps", "has %d steps; the limit is %d", len(p.Steps), l.MaxSteps)
	}
	g, err := newGraph(p, l)
	if err != nil {
		return err
	}
	if err := countExprs(p, l); err != nil {
		return err
	}
	for i, s := range p.Steps {
		if err := checkStep(fmt.Sprintf("plan.steps[%d]", i), s, l, env, g.scope(i)); err != nil {
			return err
		}
	}
	return nil
}

// checkID checks one step id.
func checkID(field, id string) error {
	switch {
	case id == "":
		return errs.Field(field, "is required")
	case len(id) > MaxIDBytes:
		return errs.Field(field, "is %d bytes; the limit is %d", len(id), MaxIDBytes)
	case !identifier.MatchString(id):
		return errs.Field(field, "%s is not an identifier: a letter or underscore, then letters, digits or underscores", errs.Quote(id))
	case reserved[id]:
		return errs.Field(field, "%s is a reserved word in CEL", errs.Quote(id))
	}
	return nil
}

// checkText checks a string field's length and encoding.
func checkText(field, s string, maxBytes int, required bool) error {
	switch {
	case required && strings.TrimSpace(s) == "":
		return errs.Field(field, "is required")
	case len(s) > maxBytes:
		return errs.Field(field, "is %d bytes; the limit is %d", len(s), maxBytes)
	case !utf8.ValidString(s):
		return errs.Field(field, "is not valid UTF-8")
	}
	return nil
}

// countExprs refuses a plan with more expressions than MaxExprs, or more
// bytes of them than MaxExprTotalBytes, before any is compiled, naming
// the step that crosses the limit.
func countExprs(p *stewardv1.Plan, l Limits) error {
	n, size := 0, 0
	count := func(exprs ...string) { // the optional ones: set or not
		for _, e := range exprs {
			if e != "" {
				n, size = n+1, size+len(e)
			}
		}
	}
	for i, s := range p.Steps {
		a := s.GetAction()
		if f := s.GetForeach(); f != nil {
			a = f.GetBody().GetAction()
			count(f.Over)
		}
		count(s.When, s.Expect, a.GetTargetExpr())
		n += len(a.GetParamExprs()) // each entry, empty or not
		for _, e := range a.GetParamExprs() {
			size += len(e)
		}
		field := fmt.Sprintf("plan.steps[%d]", i)
		if n > l.MaxExprs {
			return errs.Field(field, "brings the plan to more than %d expressions; the limit is %d", l.MaxExprs, l.MaxExprs)
		}
		if size > l.MaxExprTotalBytes {
			return errs.Field(field, "brings the plan's expressions to more than %d bytes together; the limit is %d", l.MaxExprTotalBytes, l.MaxExprTotalBytes)
		}
	}
	return nil
}
