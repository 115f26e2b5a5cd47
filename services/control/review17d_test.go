package control_test

import (
	"github.com/steward-run/steward/pkg/event"

	"time"

	"context"
	"testing"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/rpc"
	"github.com/steward-run/steward/pkg/task"
)

// Review 17d: failing tests for the i17 fixes.

// TestReview17dCheckpointPausedAndResumedTakesItsAnswer: a person pauses
// a task that waits on a checkpoint's question, then resumes it. The
// resume puts the task back to WAITING_FOR_INPUT, the question still
// open; the answer that follows is the checkpoint's. answerTo reads the
// pause's TaskResumed as closing the question, and fails the step.
func TestReview17dCheckpointPausedAndResumedTakesItsAnswer(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	id := r.planTask(t, "pause-ask", nil)
	r.runPlan(t, id, &stewardv1.Plan{Version: 1, Ending: stewardv1.PlanEnding_PLAN_ENDING_HAND_BACK, Steps: []*stewardv1.Step{
		{Id: "ship", Kind: &stewardv1.Step_Checkpoint{Checkpoint: &stewardv1.CheckpointStep{Question: "Ship?", Choices: []string{"yes", "no"}}}},
	}})
	r.WaitTask(id, func(tk *stewardv1.Task) bool { return tk.Status == stewardv1.TaskStatus_TASK_STATUS_WAITING_FOR_INPUT })
	who := rpc.Identity{Principal: "user:a"}
	if _, err := r.ctl.PauseTask(ctx, who, &stewardv1.PauseTaskRequest{TaskId: id}); err != nil {
		t.Fatal(err)
	}
	r.resume(t, id)
	tk := r.task(t, id)
	if tk.Status != stewardv1.TaskStatus_TASK_STATUS_WAITING_FOR_INPUT || tk.OpenInput == nil {
		t.Fatalf("after pause and resume: %v, open input %v: want the question still open", tk.Status, tk.OpenInput)
	}
	r.settle()
	if st := task.FindStep(r.task(t, id), "ship"); st.Status != stepRunning {
		t.Fatalf("ship = %v (%s) while its question is open after a pause and resume", st.Status, st.Reason)
	}
	if _, err := r.ctl.ProvideInput(ctx, who, &stewardv1.ProvideInputRequest{TaskId: id, Answer: "yes"}); err != nil {
		t.Fatal(err)
	}
	tk = r.WaitTask(id, func(tk *stewardv1.Task) bool { return task.FindStep(tk, "ship").Status != stepRunning })
	if st := task.FindStep(tk, "ship"); st.Status != stepSucceeded {
		t.Fatalf("ship = %v (%s): the answer to its own question, given after a pause and resume, did not end it", st.Status, st.Reason)
	}
}

// TestReview17dRetryRefusedUnderADeniedPlanIsProposedWhenARevisionRuns:
// under RECOVERY_MODE_RETRY, step x's permitted action fails transiently
// while a denied revision is in force: the recovery policy does not retry
// it (task.PlanWithdrew). The agent's next revision keeps x and is
// allowed: the plan asks for x again, and the driver leaves x running,
// waiting for the retry (retryDue is true again). But the recovery policy
// proposes owed retries only on a resume or an answer (retryPending), not
// on a plan's judgement: nothing proposes it, and x runs forever.
func TestReview17dRetryRefusedUnderADeniedPlanIsProposedWhenARevisionRuns(t *testing.T) {
	r := newRig(t)
	id := r.planTaskWith(t, "denied-retry", func(c *stewardv1.TaskContract) {
		c.RecoveryPolicy = &stewardv1.RecoveryPolicy{Mode: stewardv1.RecoveryMode_RECOVERY_MODE_RETRY}
	}, nil)
	x := act("x", nil, "search", "x", nil)
	plan := func(v uint32, steps ...*stewardv1.Step) *stewardv1.Plan {
		return &stewardv1.Plan{Version: v, Ending: stewardv1.PlanEnding_PLAN_ENDING_HAND_BACK, Steps: steps}
	}
	r.runPlan(t, id, plan(1, x))
	_, a := r.step(id, "x", stepRunning)
	r.dispatch(t, id, a.ActionId) // permitted: it runs to its end whatever the plan says
	r.deniedPlan(t, id, plan(2, x, act("y", nil, "write", "doc", map[string]string{"text": "'y'"})))
	r.finish(t, id, a.ActionId, failed(stewardv1.FailureClass_FAILURE_CLASS_TRANSIENT, "503"), nil, time.Now())
	r.settle()
	r.runPlan(t, id, plan(3, x, act("z", nil, "search", "z", nil)))
	r.step(id, "z", stepRunning)
	r.settle()
	tk := r.task(t, id)
	st := task.FindStep(tk, "x")
	var retried bool
	for _, y := range tk.Actions {
		retried = retried || y.RetryOf == a.ActionId
	}
	if st.Status == stepRunning && !retried {
		t.Fatalf("x = %v (attempt %d) on failed action %s, and no retry of it proposed: under version 3, which asks for x, nothing will move x again",
			st.Status, st.Attempts, a.ActionId)
	}
}

// TestReview17dEachFailureOfAChangedStepEscalates: step s fails before it
// starts (its parameters cannot be evaluated) under definition A; the
// task waits for a person, who resumes it. The agent changes s to B,
// which fails the same way: asked again. It changes s back to A, which
// fails a third time — a new failure, under a new version — but the
// escalation's id (step, attempt, StepHash) is the first one's, since a
// step that fails before it starts keeps its attempt: nothing stops the
// task, and no one is asked (docs/plans.md: "once per failure").
func TestReview17dEachFailureOfAChangedStepEscalates(t *testing.T) {
	r := newRig(t)
	id := r.planTask(t, "aba", nil)
	plan := func(v uint32, s *stewardv1.Step) *stewardv1.Plan {
		return &stewardv1.Plan{Version: v, Ending: stewardv1.PlanEnding_PLAN_ENDING_HAND_BACK, Steps: []*stewardv1.Step{
			act("d", nil, "search", "d", nil), s}}
	}
	defA := func() *stewardv1.Step {
		return act("s", []string{"d"}, "search", "s", map[string]string{"q": "steps.d.result.nope"})
	}
	defB := func() *stewardv1.Step {
		return act("s", []string{"d"}, "search", "s", map[string]string{"q": "steps.d.result.other"})
	}
	waiting := func(n int) {
		t.Helper()
		r.WaitTask(id, func(tk *stewardv1.Task) bool {
			return tk.Status == stewardv1.TaskStatus_TASK_STATUS_WAITING_FOR_INPUT || r.Count(id, event.TypePlanStepEnded) >= n+1
		})
		r.settle()
		if tk := r.task(t, id); tk.Status != stewardv1.TaskStatus_TASK_STATUS_WAITING_FOR_INPUT {
			t.Fatalf("failure %d of s (%s) under version %d: task %v, %d questions asked; want it to wait for a person",
				n, task.FindStep(tk, "s").Reason, tk.Plan.Version, tk.Status, r.Count(id, event.TypeTaskNeedsInput))
		}
		r.resume(t, id)
	}
	r.runPlan(t, id, plan(1, defA()))
	_, d := r.step(id, "d", stepRunning)
	r.ok(t, id, d, `{}`)
	r.step(id, "s", stepFailed)
	waiting(1)
	r.runPlan(t, id, plan(2, defB()))
	waiting(2)
	r.runPlan(t, id, plan(3, defA()))
	waiting(3)
}
