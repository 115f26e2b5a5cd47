package governance

import (
	"encoding/json"
	"testing"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// TestReviewTaskCallsCountAStepsRetriesAlike: a transient failure of a
// plan step's irreversible call is retried by the recovery policy. An
// action step's retry joins the step (PlanStepStarted names it, so its
// ActionIds hold it); a foreach item's retry does not (the driver follows
// it through retry_of, and ActionIds stay the items'), so taskCalls counts
// it as the agent's own call outside the plan. The same retry weighs on a
// revision's approval or not depending on the step's kind.
func TestReviewTaskCallsCountAStepsRetriesAlike(t *testing.T) {
	irr := stewardv1.EffectClass_EFFECT_CLASS_IRREVERSIBLE
	act := func(id, retryOf string, s stewardv1.ActionStatus) *stewardv1.Action {
		return &stewardv1.Action{ActionId: id, RetryOf: retryOf, Status: s, EffectClass: irr, PlanStepId: "pay"}
	}
	failed, ok := stewardv1.ActionStatus_ACTION_STATUS_FAILED, stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED
	single := &stewardv1.Task{
		Plan:    &stewardv1.PlanState{Steps: []*stewardv1.PlanStepState{{StepId: "pay", ActionIds: []string{"a0", "r0"}}}},
		Actions: []*stewardv1.Action{act("a0", "", failed), act("r0", "a0", ok)},
	}
	foreach := &stewardv1.Task{
		Plan:    &stewardv1.PlanState{Steps: []*stewardv1.PlanStepState{{StepId: "pay", ActionIds: []string{"a0", "a1"}}}},
		Actions: []*stewardv1.Action{act("a0", "", failed), act("a1", "", ok), act("r0", "a0", ok)},
	}
	js := func(m map[string]any) string { b, _ := json.Marshal(m); return string(b) }
	if s, f := js(taskCalls(single)), js(taskCalls(foreach)); s != f {
		t.Fatalf("an action step's retry: task_calls %s; a foreach item's retry: task_calls %s — the step's own retry counted as a call outside the plan", s, f)
	}
}
