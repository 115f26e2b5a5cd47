package governance

import (
	"encoding/json"
	"testing"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// TestTaskCalls: what the plan query sees of the task's calls outside the
// plan version. A step's retries are the step's, however the driver
// follows them (an action step's retry joins its action ids, a foreach
// item's does not); a retired step's call counts only once permitted, so
// the count is the same whether or not the driver has withdrawn it yet;
// the agent's own calls count while under way.
func TestTaskCalls(t *testing.T) {
	const (
		failed    = stewardv1.ActionStatus_ACTION_STATUS_FAILED
		succeeded = stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED
		awaiting  = stewardv1.ActionStatus_ACTION_STATUS_AWAITING_APPROVAL
		withdrawn = stewardv1.ActionStatus_ACTION_STATUS_WITHDRAWN
		denied    = stewardv1.ActionStatus_ACTION_STATUS_DENIED
	)
	act := func(id, step, retryOf string, s stewardv1.ActionStatus, permitted bool) *stewardv1.Action {
		a := &stewardv1.Action{ActionId: id, PlanStepId: step, RetryOf: retryOf, Status: s, EffectClass: stewardv1.EffectClass_EFFECT_CLASS_IRREVERSIBLE}
		if permitted {
			a.Permit = &stewardv1.ActionPermit{PermitId: "p-" + id}
		}
		return a
	}
	planned := func(steps map[string][]string, retired []string, actions ...*stewardv1.Action) *stewardv1.Task {
		ps := &stewardv1.PlanState{}
		for id, ids := range steps {
			ps.Steps = append(ps.Steps, &stewardv1.PlanStepState{StepId: id, ActionIds: ids})
		}
		for _, id := range retired {
			ps.Retired = append(ps.Retired, &stewardv1.PlanStepState{StepId: id, Status: stewardv1.StepStatus_STEP_STATUS_WITHDRAWN})
		}
		return &stewardv1.Task{Plan: ps, Actions: actions}
	}
	calls := func(tk *stewardv1.Task) string {
		b, err := json.Marshal(taskCalls(tk))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	const none = `{"calls":0,"effects":{}}`
	const one = `{"calls":1,"effects":{"EFFECT_CLASS_IRREVERSIBLE":1}}`
	for _, tc := range []struct {
		name string
		task *stewardv1.Task
		want string
	}{
		{"an action step's retry", planned(map[string][]string{"pay": {"a0", "r0"}}, nil,
			act("a0", "pay", "", failed, true), act("r0", "pay", "a0", succeeded, true)), none},
		{"a foreach item's retry", planned(map[string][]string{"pay": {"a0", "a1"}}, nil,
			act("a0", "pay", "", failed, true), act("a1", "pay", "", succeeded, true), act("r0", "pay", "a0", succeeded, true)), none},
		{"a retired step's call awaiting approval", planned(nil, []string{"old"}, act("o", "old", "", awaiting, false)), none},
		{"a retired step's call, withdrawn", planned(nil, []string{"old"}, act("o", "old", "", withdrawn, false)), none},
		{"a retired step's call, permitted", planned(nil, []string{"old"}, act("o", "old", "", succeeded, true)), one},
		{"the agent's own call under way", planned(nil, nil, act("mine", "", "", awaiting, false)), one},
		{"the agent's own call, denied", planned(nil, nil, act("mine", "", "", denied, false)), none},
	} {
		if got := calls(tc.task); got != tc.want {
			t.Errorf("%s: task_calls %s, want %s", tc.name, got, tc.want)
		}
	}
}
