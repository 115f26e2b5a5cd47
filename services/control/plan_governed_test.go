package control_test

import (
	"testing"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/task"
)

// The plan driver under governance's judgement of a plan (docs/plans.md,
// "Plan policy", "Running a plan"): a plan that policy denies runs
// nothing.

// TestPlanDeniedProposesNothing: a plan that policy denies stops before
// anything of it runs: once the driver has handled every event on the
// log, no step has moved and nothing was proposed.
func TestPlanDeniedProposesNothing(t *testing.T) {
	r := newRig(t)
	id := r.planTask(t, "denied", nil)
	tk, _, err := r.submitPlan(id, "", &stewardv1.Plan{Version: 1, Ending: stewardv1.PlanEnding_PLAN_ENDING_PRODUCE, Steps: []*stewardv1.Step{
		act("a", nil, "search", "index", nil),
		act("b", nil, "write", "doc", map[string]string{"text": "'b'"}),
		act("c", []string{"a", "b"}, "search", "c", nil),
	}})
	if err != nil {
		t.Fatal(err)
	}
	// Governance's judgement, as the plan policy would append it.
	r.Append(id, &stewardv1.PlanEvaluated{Version: 1, PlanHash: tk.Plan.PlanHash,
		Snapshot: &stewardv1.PolicySnapshot{SnapshotId: "plan-snap", Decision: stewardv1.PolicyDecision_POLICY_DECISION_DENY, Reasons: []string{"no writes here"}}})
	r.WaitTask(id, func(tk *stewardv1.Task) bool { return task.PlanStopped(tk.Plan) })
	r.settle()
	tk = r.task(t, id)
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
	r := newRig(t)
	id := r.planTask(t, "denied-revision", nil)
	x := act("x", nil, "write", "doc", map[string]string{"text": "'x'"})
	r.runPlan(t, id, &stewardv1.Plan{Version: 1, Ending: stewardv1.PlanEnding_PLAN_ENDING_HAND_BACK, Steps: []*stewardv1.Step{x}})
	_, a := r.step(id, "x", stepRunning) // proposed, not yet judged
	tk, _, err := r.submitPlan(id, "", &stewardv1.Plan{Version: 2, Ending: stewardv1.PlanEnding_PLAN_ENDING_HAND_BACK, Steps: []*stewardv1.Step{
		x, act("y", nil, "write", "doc", map[string]string{"text": "'y'"}),
	}})
	if err != nil {
		t.Fatal(err)
	}
	r.Append(id, &stewardv1.PlanEvaluated{Version: 2, PlanHash: tk.Plan.PlanHash,
		Snapshot: &stewardv1.PolicySnapshot{SnapshotId: "plan-snap-2", Decision: stewardv1.PolicyDecision_POLICY_DECISION_DENY, Reasons: []string{"too many writes"}}})
	r.WaitTask(id, func(tk *stewardv1.Task) bool { return task.PlanStopped(tk.Plan) })
	r.settle()
	if got := task.FindAction(r.task(t, id), a.ActionId); got.Status != stewardv1.ActionStatus_ACTION_STATUS_WITHDRAWN {
		t.Fatalf("x's action %s is %v under a plan policy denied: governance will permit it and it will run", a.ActionId, got.Status)
	}
}
