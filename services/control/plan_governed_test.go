package control_test

import (
	"testing"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/task"
)

// The plan driver under governance's judgement of a plan (docs/plans.md,
// "Plan policy", "Running a plan"): a plan that policy denies runs
// nothing.

// deniedPlan submits p for the task and records governance's deny of it,
// as the plan policy would; it returns once the driver has handled
// everything on the log then.
func (r *harness) deniedPlan(t *testing.T, taskID string, p *stewardv1.Plan) {
	t.Helper()
	tk, _, err := r.submitPlan(taskID, "", p)
	if err != nil {
		t.Fatal(err)
	}
	r.Append(taskID, &stewardv1.PlanEvaluated{Version: p.Version, PlanHash: tk.Plan.PlanHash,
		Snapshot: &stewardv1.PolicySnapshot{SnapshotId: "plan-snap-deny", Decision: stewardv1.PolicyDecision_POLICY_DECISION_DENY, Reasons: []string{"denied here"}}})
	r.WaitTask(taskID, func(tk *stewardv1.Task) bool { return task.PlanStopped(tk.Plan) })
	r.settle()
}

// TestPlanDeniedProposesNothing: a plan that policy denies stops before
// anything of it runs: once the driver has handled every event on the
// log, no step has moved and nothing was proposed.
func TestPlanDeniedProposesNothing(t *testing.T) {
	r := newHarness(t)
	id := r.planTask(t, "denied", nil)
	r.deniedPlan(t, id, &stewardv1.Plan{Version: 1, Ending: stewardv1.PlanEnding_PLAN_ENDING_PRODUCE, Steps: []*stewardv1.Step{
		act("a", nil, "search", "index", nil),
		act("b", nil, "write", "doc", map[string]string{"text": "'b'"}),
		act("c", []string{"a", "b"}, "search", "c", nil),
	}})
	tk := r.task(t, id)
	if len(tk.Actions) != 0 {
		t.Fatalf("%d actions proposed under a denied plan, want none", len(tk.Actions))
	}
	for _, st := range tk.Plan.Steps {
		if st.Status != stepPending || st.Attempts != 0 {
			t.Errorf("step %s = %v (attempts %d) under a denied plan, want pending, never started", st.StepId, st.Status, st.Attempts)
		}
	}
	if tk.Status != stewardv1.TaskStatus_TASK_STATUS_RUNNING {
		t.Errorf("task %v, want it running, the agent's to revise", tk.Status)
	}
}

// TestPlanDeniedRevisionWithdrawsItsStepsUnpermittedActions: "a plan that
// policy denies runs nothing": the actions a denied revision's kept steps
// proposed under the version before it, not yet permitted, are withdrawn.
func TestPlanDeniedRevisionWithdrawsItsStepsUnpermittedActions(t *testing.T) {
	r := newHarness(t)
	id := r.planTask(t, "denied-revision", nil)
	x := act("x", nil, "write", "doc", map[string]string{"text": "'x'"})
	r.runPlan(t, id, &stewardv1.Plan{Version: 1, Ending: stewardv1.PlanEnding_PLAN_ENDING_HAND_BACK, Steps: []*stewardv1.Step{x}})
	_, a := r.step(id, "x", stepRunning) // proposed, not yet judged
	r.deniedPlan(t, id, &stewardv1.Plan{Version: 2, Ending: stewardv1.PlanEnding_PLAN_ENDING_HAND_BACK, Steps: []*stewardv1.Step{
		x, act("y", nil, "write", "doc", map[string]string{"text": "'y'"}),
	}})
	if got := task.FindAction(r.task(t, id), a.ActionId); got.Status != stewardv1.ActionStatus_ACTION_STATUS_WITHDRAWN {
		t.Fatalf("x's action %s is %v under a plan policy denied: governance will permit it and it will run", a.ActionId, got.Status)
	}
}
