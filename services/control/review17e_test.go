package control_test

import (
	"testing"
	"time"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/task"
)

// Review 17e: failing tests for findings on 62c13e4.

// TestReview17eCheckpointSurvivesASuspension: a checkpoint's question is
// open; governance suspends the task (its budget spent by a sibling's
// cost, an approval overdue, its deadline) — the fold closes the question
// (keepInput). The resume that lifts the suspension (RaiseBudget writes it
// for Steward) is read by answerTo as closing the question without an
// answer, and the checkpoint fails: nobody declined it, and nobody can
// answer it now. docs/plans.md: only "a resume (ResumeTask) of the task
// waiting for it" closes the question.
func TestReview17eCheckpointSurvivesASuspension(t *testing.T) {
	r := newRig(t)
	id := r.planTask(t, "suspend-ask", nil)
	r.runPlan(t, id, &stewardv1.Plan{Version: 1, Ending: stewardv1.PlanEnding_PLAN_ENDING_HAND_BACK, Steps: []*stewardv1.Step{
		{Id: "ship", Kind: &stewardv1.Step_Checkpoint{Checkpoint: &stewardv1.CheckpointStep{Question: "Ship?", Choices: []string{"yes", "no"}}}},
	}})
	r.WaitTask(id, func(tk *stewardv1.Task) bool { return tk.Status == stewardv1.TaskStatus_TASK_STATUS_WAITING_FOR_INPUT })
	r.Append(id, &stewardv1.TaskSuspended{Reason: "deadline passed", Cause: stewardv1.SuspendCause_SUSPEND_CAUSE_DEADLINE})
	r.resume(t, id)
	r.settle()
	tk := r.task(t, id)
	if st := task.FindStep(tk, "ship"); st.Status == stepFailed {
		t.Fatalf("ship = %v (%s) after a suspension and its lifting; task %v, open input %v: nobody declined it", st.Status, st.Reason, tk.Status, tk.OpenInput)
	}
}

// TestReview17eHeldRetryWaitsForTheRevisionsApproval: x's action fails
// transiently while a denied revision is in force: its retry is held
// back. The next revision keeps x and policy requires its approval. The
// docs: a version awaiting approval "may start: not yet". retryPending,
// now run on every PlanEvaluated, proposes x's retry at the judgement
// that asks for the approval: governance permits it (PlanWithdrew sees
// no denied plan) and it runs before anyone approved the plan.
func TestReview17eHeldRetryWaitsForTheRevisionsApproval(t *testing.T) {
	r := newRig(t)
	id := r.planTaskWith(t, "denied-then-approval", func(c *stewardv1.TaskContract) {
		c.RecoveryPolicy = &stewardv1.RecoveryPolicy{Mode: stewardv1.RecoveryMode_RECOVERY_MODE_RETRY}
	}, nil)
	x := act("x", nil, "search", "x", nil)
	plan := func(v uint32, steps ...*stewardv1.Step) *stewardv1.Plan {
		return &stewardv1.Plan{Version: v, Ending: stewardv1.PlanEnding_PLAN_ENDING_HAND_BACK, Steps: steps}
	}
	r.runPlan(t, id, plan(1, x))
	_, a := r.step(id, "x", stepRunning)
	r.dispatch(t, id, a.ActionId)
	r.deniedPlan(t, id, plan(2, x, act("y", nil, "write", "doc", map[string]string{"text": "'y'"})))
	r.finish(t, id, a.ActionId, failed(stewardv1.FailureClass_FAILURE_CLASS_TRANSIENT, "503"), nil, time.Now())
	r.settle()
	tk, _, err := r.submitPlan(id, "", plan(3, x, act("z", nil, "search", "z", nil)))
	if err != nil {
		t.Fatal(err)
	}
	r.Append(id, &stewardv1.PlanEvaluated{Version: 3, PlanHash: tk.Plan.PlanHash,
		Snapshot: &stewardv1.PolicySnapshot{SnapshotId: "plan-snap-approve", Decision: stewardv1.PolicyDecision_POLICY_DECISION_REQUIRE_APPROVAL, Reasons: []string{"needs a look"}}})
	r.WaitTask(id, func(tk *stewardv1.Task) bool {
		return tk.Plan.Governance == stewardv1.PlanGovernance_PLAN_GOVERNANCE_AWAITING_APPROVAL
	})
	r.settle()
	for _, y := range r.task(t, id).Actions {
		if y.RetryOf == a.ActionId {
			t.Fatalf("retry %s of x's action proposed while plan version 3, which keeps x, awaits its approval", y.ActionId)
		}
	}
}

// TestReview17eHeldRetryOfAChangedStepIsNotTheOldRequest: x's action
// fails transiently while a denied revision is in force, its retry held
// back. The next revision, allowed, changes x (another target). On that
// judgement retryPending proposes the held retry — the old request, which
// the plan no longer asks for — and the driver follows x onto it: x runs
// the definition the agent replaced, and its new one never runs. The
// docs: a changed step keeps its action "until that ends"; one that
// failed "starts afresh — a new attempt, so a new action".
func TestReview17eHeldRetryOfAChangedStepIsNotTheOldRequest(t *testing.T) {
	r := newRig(t)
	id := r.planTaskWith(t, "denied-then-changed", func(c *stewardv1.TaskContract) {
		c.RecoveryPolicy = &stewardv1.RecoveryPolicy{Mode: stewardv1.RecoveryMode_RECOVERY_MODE_RETRY}
	}, nil)
	plan := func(v uint32, steps ...*stewardv1.Step) *stewardv1.Plan {
		return &stewardv1.Plan{Version: v, Ending: stewardv1.PlanEnding_PLAN_ENDING_HAND_BACK, Steps: steps}
	}
	r.runPlan(t, id, plan(1, act("x", nil, "search", "x", nil)))
	_, a := r.step(id, "x", stepRunning)
	r.dispatch(t, id, a.ActionId)
	r.deniedPlan(t, id, plan(2, act("x", nil, "search", "x", nil), act("y", nil, "write", "doc", map[string]string{"text": "'y'"})))
	r.finish(t, id, a.ActionId, failed(stewardv1.FailureClass_FAILURE_CLASS_TRANSIENT, "503"), nil, time.Now())
	r.settle()
	r.runPlan(t, id, plan(3, act("x", nil, "search", "x-changed", nil)))
	r.settle()
	for _, y := range r.task(t, id).Actions {
		if y.RetryOf == a.ActionId {
			t.Fatalf("retry %s of x's action (target %q, the old request) proposed under version 3, which changed x's target to x-changed", y.ActionId, y.Target)
		}
	}
}

// TestReview17eRetryOfAChangedRunningStepIsNotTheOldRequest: the same
// without a denied plan (recoverFrom, before 62c13e4): version 2 changes
// x while its action is in flight; the action then fails transiently,
// and the recovery policy proposes the old request again, which x
// follows, instead of x starting afresh under its new definition.
func TestReview17eRetryOfAChangedRunningStepIsNotTheOldRequest(t *testing.T) {
	r := newRig(t)
	id := r.planTaskWith(t, "changed-in-flight", func(c *stewardv1.TaskContract) {
		c.RecoveryPolicy = &stewardv1.RecoveryPolicy{Mode: stewardv1.RecoveryMode_RECOVERY_MODE_RETRY}
	}, nil)
	plan := func(v uint32, steps ...*stewardv1.Step) *stewardv1.Plan {
		return &stewardv1.Plan{Version: v, Ending: stewardv1.PlanEnding_PLAN_ENDING_HAND_BACK, Steps: steps}
	}
	r.runPlan(t, id, plan(1, act("x", nil, "search", "x", nil)))
	_, a := r.step(id, "x", stepRunning)
	r.dispatch(t, id, a.ActionId)
	r.runPlan(t, id, plan(2, act("x", nil, "search", "x-changed", nil)))
	r.finish(t, id, a.ActionId, failed(stewardv1.FailureClass_FAILURE_CLASS_TRANSIENT, "503"), nil, time.Now())
	r.settle()
	for _, y := range r.task(t, id).Actions {
		if y.RetryOf == a.ActionId {
			t.Fatalf("retry %s of x's action (target %q, the old request) proposed under version 2, which changed x's target to x-changed", y.ActionId, y.Target)
		}
	}
}
