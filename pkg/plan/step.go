package plan

import (
	"fmt"

	"google.golang.org/protobuf/encoding/protojson"

	"github.com/steward-run/steward/pkg/errs"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/toolpin"
	"github.com/steward-run/steward/pkg/toolreg"
)

// checkStep checks one step, whose ids and dependencies are already
// checked, under field (plan.steps[i]); sc is what its expressions may
// read.
func checkStep(field string, s *stewardv1.Step, l Limits, env Env, sc scope) error {
	if err := checkText(field+".milestone_id", s.MilestoneId, maxRefBytes, false); err != nil {
		return err
	}
	if _, ok := stewardv1.OnFailure_name[int32(s.OnFailure)]; !ok {
		return errs.Field(field+".on_failure", "%d is not a known value", s.OnFailure)
	}
	if err := checkExpr(field+".when", s.When, sc, wantBool, l); err != nil {
		return err
	}
	expect := sc
	expect.result = true
	switch k := s.Kind.(type) {
	case *stewardv1.Step_Action:
		if err := checkAction(field+".action", k.Action, l, env, sc); err != nil {
			return err
		}
	case *stewardv1.Step_SubTask:
		if err := checkSubTask(field+".sub_task", k.SubTask, env); err != nil {
			return err
		}
	case *stewardv1.Step_Checkpoint:
		if err := checkCheckpoint(field+".checkpoint", k.Checkpoint); err != nil {
			return err
		}
	case *stewardv1.Step_Wait:
		if s.Expect != "" {
			return errs.Field(field+".expect", "a wait has no result to assert on")
		}
		if err := checkWait(field+".wait", k.Wait, l); err != nil {
			return err
		}
	case *stewardv1.Step_Foreach:
		if err := checkForeach(field+".foreach", k.Foreach, l, env, sc); err != nil {
			return err
		}
		expect.item = true
	default:
		return errs.Field(field, "has no kind: set one of action, sub_task, checkpoint, wait or foreach")
	}
	return checkExpr(field+".expect", s.Expect, expect, wantBool, l)
}

// checkExpr checks one optional expression: its size, then that it
// compiles in sc to w.
func checkExpr(field, expr string, sc scope, w want, l Limits) error {
	if expr == "" {
		return nil
	}
	if err := checkText(field, expr, l.MaxExprBytes, false); err != nil {
		return err
	}
	if _, _, err := check(sc, expr, w); err != nil {
		return errs.Field(field, "%v", errs.Cut(err.Error(), maxErrBytes))
	}
	return nil
}

// maxErrBytes bounds how much of CEL's message a refusal repeats: it
// quotes the expression, which can be long.
const maxErrBytes = 1024

// checkAction checks a tool call: its tool against env, its target and
// parameters, and its retry policy against the tool's.
func checkAction(field string, a *stewardv1.ActionStep, l Limits, env Env, sc scope) error {
	if a == nil {
		return errs.Field(field, "is required")
	}
	if err := checkText(field+".tool", a.Tool, maxRefBytes, true); err != nil {
		return err
	}
	if err := checkText(field+".tool_version", a.ToolVersion, maxRefBytes, false); err != nil {
		return err
	}
	tool, err := allowTool(field, a, env)
	if err != nil {
		return err
	}
	if err := checkText(field+".target", a.Target, MaxTargetBytes, false); err != nil {
		return err
	}
	if a.Target != "" && a.TargetExpr != "" {
		return errs.Field(field+".target_expr", "is set with target: give the target literally or as an expression, not both")
	}
	if err := checkExpr(field+".target_expr", a.TargetExpr, sc, wantString, l); err != nil {
		return err
	}
	// A literal that JSON cannot hold (NaN, a value of no kind, possible
	// in the binary form) would make an action with no canonical request.
	if _, err := protojson.Marshal(a.Params); err != nil {
		return errs.Field(field+".params", "is not a JSON object: %v", err)
	}
	if len(a.ParamExprs) > l.MaxParamExprs {
		return errs.Field(field+".param_exprs", "has %d entries; the limit is %d", len(a.ParamExprs), l.MaxParamExprs)
	}
	for _, name := range sorted(keys(a.ParamExprs)) {
		f := fmt.Sprintf("%s.param_exprs[%s]", field, errs.Quote(name))
		if err := checkText(f, name, maxRefBytes, true); err != nil {
			return err
		}
		if _, ok := a.Params.GetFields()[name]; ok {
			return errs.Field(f, "%s is also in params: a parameter is literal or computed, not both", errs.Quote(name))
		}
		if err := checkExpr(f, a.ParamExprs[name], sc, wantAny, l); err != nil {
			return err
		}
	}
	if a.RetryPolicy != nil {
		if _, err := toolreg.NarrowRetry(field+".retry_policy.", tool, a.RetryPolicy); err != nil {
			return err
		}
	}
	return nil
}

// allowTool checks the step's tool against env, and returns its contract
// when env can look it up.
func allowTool(field string, a *stewardv1.ActionStep, env Env) (*stewardv1.ToolContract, error) {
	if a.ToolVersion == "" {
		if _, ok := toolpin.Find(env.AllowedTools, a.Tool); !ok {
			return nil, errs.Field(field+".tool", "%s is not among the tools the task may call", errs.Quote(a.Tool))
		}
	} else if !toolpin.Allows(env.AllowedTools, a.Tool, a.ToolVersion) {
		return nil, errs.Field(field+".tool_version", "%s is not among the tools the task may call", errs.Quote(a.Tool+"@"+a.ToolVersion))
	}
	if env.Tool == nil {
		return nil, nil
	}
	tool, err := env.Tool(a.Tool, a.ToolVersion)
	if err != nil {
		return nil, errs.Field(field+".tool", "%v", err)
	}
	return tool, nil
}

// checkSubTask checks a delegation as far as the plan can: a contract and
// a delegate, and tools the task may hand on. The control plane checks
// the contract in full, as DelegateTask does, when it takes the plan.
func checkSubTask(field string, s *stewardv1.SubTaskStep, env Env) error {
	if s == nil {
		return errs.Field(field, "is required")
	}
	if s.Contract == nil {
		return errs.Field(field+".contract", "is required")
	}
	// A time or duration out of range has no JSON form: the plan would
	// have no hash (DelegateTask refuses it too, later).
	if _, err := protojson.Marshal(s.Contract); err != nil {
		return errs.Field(field+".contract", "does not encode as JSON: %v", err)
	}
	if err := checkText(field+".delegate_ref", s.DelegateRef, maxRefBytes, true); err != nil {
		return err
	}
	for i, t := range s.Contract.AllowedTools {
		if !toolpin.Within(env.AllowedTools, t) {
			return errs.Field(fmt.Sprintf("%s.contract.allowed_tools[%d]", field, i), "%s is not among the tools the task may call: a sub-task may only keep or narrow them", errs.Quote(t))
		}
	}
	return nil
}

// checkCheckpoint checks a question for a person, as RequestInput does.
func checkCheckpoint(field string, c *stewardv1.CheckpointStep) error {
	if c == nil {
		return errs.Field(field, "is required")
	}
	if err := checkText(field+".question", c.Question, maxQuestionBytes, true); err != nil {
		return err
	}
	if len(c.Choices) > maxChoices {
		return errs.Field(field+".choices", "has %d entries; the limit is %d", len(c.Choices), maxChoices)
	}
	seen := map[string]bool{}
	for i, ch := range c.Choices {
		f := fmt.Sprintf("%s.choices[%d]", field, i)
		if err := checkText(f, ch, maxChoiceBytes, true); err != nil {
			return err
		}
		if seen[ch] {
			return errs.Field(f, "%s is listed twice", errs.Quote(ch))
		}
		seen[ch] = true
	}
	return checkText(field+".ask_ref", c.AskRef, maxRefBytes, false)
}

func keys(m map[string]string) map[string]bool {
	out := make(map[string]bool, len(m))
	for k := range m {
		out[k] = true
	}
	return out
}
