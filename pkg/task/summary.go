package task

import (
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// Summary copies a task as ListTasks shows it (and a change to a task too
// heavy for an answer is answered): everything but what makes a
// task heavy and is one GetTask away — the plan's steps (their params,
// expressions and results), the actions' canonical requests, rationales
// and results, an approval's parameters and rationale, the decisions and
// the context ledger. The copy never
// touches the heavy parts, so a page costs what its summaries weigh.
func Summary(t *stewardv1.Task) *stewardv1.Task {
	s := cloneExcept(t, "actions", "plan", "decisions", "context_items")
	for _, a := range t.Actions {
		sa := cloneExcept(a, "request", "rationale", "outcome", "approval")
		sa.Outcome = cloneExcept(a.Outcome, "result")
		sa.Approval = lightApproval(a.Approval)
		s.Actions = append(s.Actions, sa)
	}
	if t.Plan != nil {
		s.Plan = cloneExcept(t.Plan, "plan", "steps", "retired", "approval")
		s.Plan.Steps = lightSteps(t.Plan.Steps)
		s.Plan.Retired = lightSteps(t.Plan.Retired)
		s.Plan.Approval = lightApproval(t.Plan.Approval)
	}
	return s
}

func lightApproval(a *stewardv1.Approval) *stewardv1.Approval {
	return cloneExcept(a, "parameters_json", "rationale")
}

func lightSteps(steps []*stewardv1.PlanStepState) []*stewardv1.PlanStepState {
	out := make([]*stewardv1.PlanStepState, 0, len(steps))
	for _, st := range steps {
		out = append(out, cloneExcept(st, "result"))
	}
	return out
}

// cloneExcept returns a deep copy of m without the fields named skip (nil
// for nil). The fields kept are first shared into a new message, which is
// only read, then cloned.
func cloneExcept[M proto.Message](m M, skip ...protoreflect.Name) M {
	var zero M
	src := m.ProtoReflect()
	if !src.IsValid() {
		return zero
	}
	dst := src.New()
	src.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		for _, name := range skip {
			if fd.Name() == name {
				return true
			}
		}
		dst.Set(fd, v)
		return true
	})
	return proto.Clone(dst.Interface()).(M)
}
