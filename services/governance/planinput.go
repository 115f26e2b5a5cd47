package governance

import (
	"bytes"
	"context"
	"encoding/json"
	"strconv"

	"github.com/steward-run/steward/pkg/errs"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/toolpin"
	"github.com/steward-run/steward/pkg/toolreg"
)

// planInput builds the input document of the plan query for t's plan in
// force (docs/plans.md, "Plan policy"), and the hash of its canonical
// form. Each step that calls a tool is shown with the tool's contract as
// the action query sees it, and with the most calls it can make: one,
// or a foreach's max_items. task_calls counts the task's calls outside
// this version's steps (taskCalls), so that a rule can weigh the task's
// calls in all: a revision that drops steps already run and adds new ones
// does not start counting afresh.
func (p *Plane) planInput(ctx context.Context, t *stewardv1.Task) (map[string]any, inputRecord, error) {
	ps := t.Plan
	planFacts, err := protoFacts(ps.GetPlan().ProtoReflect())
	if err != nil {
		return nil, inputRecord{}, err
	}
	taskFacts, err := protoFacts(t.Contract.ProtoReflect())
	if err != nil {
		return nil, inputRecord{}, err
	}
	taskFacts["status"] = t.Status.String()
	revision := any(nil)
	if ps.Revision != nil {
		if revision, err = protoFacts(ps.Revision.ProtoReflect()); err != nil {
			return nil, inputRecord{}, err
		}
	}
	steps := make([]any, 0, len(ps.GetPlan().GetSteps()))
	effects := map[string]int{}
	kinds := map[string]int{}
	calls := 0
	for _, st := range ps.GetPlan().GetSteps() {
		facts, kind, tool, n, err := p.stepFacts(ctx, t, st)
		if err != nil {
			return nil, inputRecord{}, err
		}
		steps = append(steps, facts)
		kinds[kind]++
		if n > 0 {
			calls += n
			effects[tool.GetEffectClass().String()] += n
		}
	}
	counts := map[string]any{"steps": number(len(steps)), "calls": number(calls), "kinds": numbers(kinds), "effects": numbers(effects)}
	taskCalls := taskCalls(t)
	planMeta := map[string]any{"version": number(int(ps.Version)), "hash": ps.PlanHash, "submitted_by": validUTF8(ps.SubmittedBy)}
	credential := credentialFacts(t)
	risk := map[string]any{"contract_risk_tier": t.Contract.GetRiskTier().String()}
	input := map[string]any{
		"plan":       planFacts,
		"plan_meta":  planMeta,
		"revision":   revision,
		"steps":      steps,
		"counts":     counts,
		"task":       taskFacts,
		"credential": credential,
		"risk":       risk,
		"task_calls": taskCalls,
	}
	rec, err := canonicalInput(new(bytes.Buffer), []member{
		{key: "counts", value: counts},
		{key: "credential", value: hashedStrings(credential)},
		{key: "plan", value: planFacts},
		{key: "plan_meta", value: planMeta},
		{key: "revision", value: revision},
		{key: "risk", value: risk},
		{key: "steps", value: steps},
		{key: "task", value: taskFacts},
		{key: "task_calls", value: taskCalls},
	})
	if err != nil {
		return nil, inputRecord{}, err
	}
	return input, rec, nil
}

// stepFacts is what the plan query sees of one step: its id, kind and
// dependencies, and for a step that calls a tool (an action, or a
// foreach over one) the tool's contract and the most calls it makes; and
// the step's kind, that tool and that number, for the counts.
func (p *Plane) stepFacts(ctx context.Context, t *stewardv1.Task, st *stewardv1.Step) (facts map[string]any, kind string, contract *stewardv1.ToolContract, calls int, err error) {
	var call *stewardv1.ActionStep
	switch k := st.Kind.(type) {
	case *stewardv1.Step_Action:
		kind, call, calls = "action", k.Action, 1
	case *stewardv1.Step_SubTask:
		kind = "sub_task"
	case *stewardv1.Step_Checkpoint:
		kind = "checkpoint"
	case *stewardv1.Step_Wait:
		kind = "wait"
	case *stewardv1.Step_Foreach:
		kind = "foreach"
		if call = k.Foreach.GetBody().GetAction(); call != nil {
			calls = int(k.Foreach.GetMaxItems())
		}
	default:
		kind = "unknown"
	}
	facts = map[string]any{
		"id":         validUTF8(st.Id),
		"kind":       kind,
		"depends_on": stringList(st.DependsOn),
		"on_failure": st.OnFailure.String(),
		"calls":      number(calls),
		"tool":       nil,
	}
	if call == nil {
		return facts, kind, nil, 0, nil
	}
	tool, contract, err := p.stepTool(ctx, t, call)
	if err != nil {
		return nil, "", nil, 0, err
	}
	facts["tool"] = tool.facts
	return facts, kind, contract, calls, nil
}

// stepTool is the tool a plan step calls, as policy reads it, and its
// contract: the version the step names, else the one the task's contract
// pins, else the latest registered before the task, as a proposal without
// a version takes. A tool that is not registered (validation refuses such
// a plan) is shown by name alone, its effect class unspecified: policy
// cannot judge it. (It is not cached: its name may be registered later.)
func (p *Plane) stepTool(ctx context.Context, t *stewardv1.Task, call *stewardv1.ActionStep) (toolFacts, *stewardv1.ToolContract, error) {
	version := call.ToolVersion
	if version == "" {
		version, _ = toolpin.Find(t.Contract.GetAllowedTools(), call.Tool)
	}
	var entry *toolreg.Entry
	var err error
	if version != "" {
		entry, err = p.tools.Lookup(ctx, p.log, t.Tenant, call.Tool, version)
	} else {
		entry, err = p.tools.LookupAsOf(ctx, p.log, t.Tenant, call.Tool, t.CreatedSequence)
	}
	switch {
	case errs.Is(err, errs.NotFound):
		unknown := &stewardv1.ToolContract{Name: call.Tool, Version: version}
		facts, err := newToolFacts("", unknown)
		return facts, unknown, err
	case err != nil:
		return toolFacts{}, nil, err
	}
	facts, err := p.toolFacts.of(entry.Tool.Tenant, entry.Tool.Contract)
	return facts, entry.Tool.Contract, err
}

// taskCalls counts the calls of task t that are not its plan version's
// steps': the agent's own proposals, and the actions of steps that earlier
// versions had. An action belongs to a step by its plan_step_id, so a
// step's retries and a foreach's items, however the driver follows them,
// are the step's, counted in counts. An agent's call counts once
// proposed, unless it was denied, rejected or withdrawn: a call under way
// may still be made. A retired step's counts only once permitted: until
// then the plan driver withdraws it, and the count must not depend on
// whether it has yet. By effect class under effects, as counts has them.
func taskCalls(t *stewardv1.Task) map[string]any {
	current := map[string]bool{}
	for _, st := range t.Plan.GetSteps() {
		current[st.StepId] = true
	}
	effects := map[string]int{}
	calls := 0
	for _, a := range t.Actions {
		switch {
		case a.Carried: // a fork's parent's calls
			continue
		case current[a.PlanStepId]:
			continue
		case a.PlanStepId != "" && a.Permit == nil:
			continue
		case a.Status == stewardv1.ActionStatus_ACTION_STATUS_DENIED, a.Status == stewardv1.ActionStatus_ACTION_STATUS_REJECTED, a.Status == stewardv1.ActionStatus_ACTION_STATUS_WITHDRAWN:
			continue
		}
		calls++
		effects[a.EffectClass.String()]++
	}
	return map[string]any{"calls": number(calls), "effects": numbers(effects)}
}

func number(n int) json.Number { return json.Number(strconv.Itoa(n)) }

func numbers(m map[string]int) map[string]any {
	out := make(map[string]any, len(m))
	for k, n := range m {
		out[k] = number(n)
	}
	return out
}
