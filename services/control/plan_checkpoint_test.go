package control_test

import (
	"context"
	"testing"

	"github.com/steward-run/steward/pkg/event"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/rpc"
	"github.com/steward-run/steward/pkg/task"
	"github.com/steward-run/steward/services/control"
)

// Checkpoint steps (docs/plans.md, "Checkpoint steps"): the question a
// step asks, and which answer is its.

// TestPlanKeptCheckpointTakesTheAnswerGiven: the id of a checkpoint's
// question derives from the step and its attempt, not the plan version,
// so a revision that keeps the step after its question was asked (and
// answered, before the driver ended the step: a restart between the two)
// finds the question asked, and its answer ends the step: the person is
// asked once.
func TestPlanKeptCheckpointTakesTheAnswerGiven(t *testing.T) {
	r := newHarness(t)
	id := r.planTask(t, "reask", nil)
	ask := func() *stewardv1.Step {
		return &stewardv1.Step{Id: "ask", Kind: &stewardv1.Step_Checkpoint{Checkpoint: &stewardv1.CheckpointStep{Question: "Publish?", Choices: []string{"yes", "no"}}}}
	}
	plan := func(v uint32, steps ...*stewardv1.Step) *stewardv1.Plan {
		return &stewardv1.Plan{Version: v, Ending: stewardv1.PlanEnding_PLAN_ENDING_HAND_BACK, Steps: steps}
	}
	r.runPlan(t, id, plan(1, ask()))
	r.WaitTask(id, func(tk *stewardv1.Task) bool { return tk.Status == stewardv1.TaskStatus_TASK_STATUS_WAITING_FOR_INPUT })
	r.settle()
	r.ctl.Stop() // the process stops before it sees the answer
	if _, err := r.ctl.ProvideInput(context.Background(), rpc.Identity{Principal: "user:a"}, &stewardv1.ProvideInputRequest{TaskId: id, Answer: "yes"}); err != nil {
		t.Fatal(err)
	}
	r.runPlan(t, id, plan(2, ask(), act("more", nil, "search", "more", nil)))
	r.ctl = control.New(r.Log, r.Logger, r.config())
	r.start(t)
	tk := r.WaitTask(id, func(tk *stewardv1.Task) bool {
		return task.FindStep(tk, "ask").Status != stepRunning || tk.Status == stewardv1.TaskStatus_TASK_STATUS_WAITING_FOR_INPUT
	})
	if st := task.FindStep(tk, "ask"); st.Status != stepSucceeded || r.Count(id, event.TypeTaskNeedsInput) != 1 {
		t.Fatalf("ask = %v (%s); %d questions asked, task %v: want the answer given to end it, asked once",
			st.Status, st.Reason, r.Count(id, event.TypeTaskNeedsInput), tk.Status)
	}
}

// TestPlanCheckpointClosedByAResumeFailsThoughALaterQuestionIsAnswered:
// a checkpoint takes only the answer to its own question. A question the
// person closed with a resume, followed before the driver's pass (a
// restart, a lagging consumer) by the agent's own question and its
// answer, fails the checkpoint: the later answer is not its.
func TestPlanCheckpointClosedByAResumeFailsThoughALaterQuestionIsAnswered(t *testing.T) {
	r := newHarness(t)
	id := r.planTask(t, "other-answer", nil)
	r.runPlan(t, id, &stewardv1.Plan{Version: 1, Ending: stewardv1.PlanEnding_PLAN_ENDING_HAND_BACK, Steps: []*stewardv1.Step{
		{Id: "ship", OnFailure: stewardv1.OnFailure_ON_FAILURE_CONTINUE,
			Kind: &stewardv1.Step_Checkpoint{Checkpoint: &stewardv1.CheckpointStep{Question: "Ship the release?", Choices: []string{"yes", "no"}}}},
	}})
	r.WaitTask(id, func(tk *stewardv1.Task) bool { return tk.Status == stewardv1.TaskStatus_TASK_STATUS_WAITING_FOR_INPUT })
	r.settle()
	r.ctl.Stop()
	r.resume(t, id) // the person declines to answer
	ctx := context.Background()
	if _, err := r.ctl.RequestInput(ctx, "agent", &stewardv1.RequestInputRequest{TaskId: id, Question: "May I delete the scratch files?", Choices: []string{"yes", "no"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.ctl.ProvideInput(ctx, rpc.Identity{Principal: "user:a"}, &stewardv1.ProvideInputRequest{TaskId: id, Answer: "yes"}); err != nil {
		t.Fatal(err)
	}
	r.ctl = control.New(r.Log, r.Logger, r.config())
	r.start(t)
	tk := r.WaitTask(id, func(tk *stewardv1.Task) bool { return task.FindStep(tk, "ship").Status != stepRunning })
	if st := task.FindStep(tk, "ship"); st.Status != stepFailed {
		t.Fatalf("ship = %v with result %q: the answer to the agent's later question ended the checkpoint the person declined", st.Status, st.GetResult().GetStringValue())
	}
}

// TestPlanUnaskedCheckpointLetsReadyStepsStart: a checkpoint step that
// starts while the task waits for an unrelated action's approval cannot
// ask yet (it asks only in a running task); a pass that asks nothing goes
// on, so a step that becomes ready meanwhile starts without waiting for
// the approval, on which it does not depend.
func TestPlanUnaskedCheckpointLetsReadyStepsStart(t *testing.T) {
	r := newHarness(t)
	id := r.planTask(t, "stall", nil)
	ask := &stewardv1.Step{Id: "ask", DependsOn: []string{"z"},
		Kind: &stewardv1.Step_Checkpoint{Checkpoint: &stewardv1.CheckpointStep{Question: "Go on?"}}}
	r.runPlan(t, id, &stewardv1.Plan{Version: 1, Ending: stewardv1.PlanEnding_PLAN_ENDING_HAND_BACK, Steps: []*stewardv1.Step{
		act("gated", nil, "write", "doc", map[string]string{"text": "'x'"}),
		act("z", nil, "search", "z", nil),
		act("w", nil, "search", "w", nil),
		ask,
		act("y", []string{"w"}, "search", "y", nil),
	}})
	_, gated := r.step(id, "gated", stepRunning)
	_, z := r.step(id, "z", stepRunning)
	_, w := r.step(id, "w", stepRunning)
	// Policy asks a person about gated's write: the task waits for approval.
	r.Append(id,
		&stewardv1.PolicyEvaluated{ActionId: gated.ActionId, Snapshot: &stewardv1.PolicySnapshot{SnapshotId: "s-gated", Decision: stewardv1.PolicyDecision_POLICY_DECISION_REQUIRE_APPROVAL}},
		&stewardv1.ApprovalRequested{Approval: &stewardv1.Approval{ApprovalId: "ap-gated", ActionId: gated.ActionId, ActionHash: gated.ActionHash}})
	r.WaitTask(id, func(tk *stewardv1.Task) bool {
		return tk.Status == stewardv1.TaskStatus_TASK_STATUS_WAITING_FOR_APPROVAL
	})
	r.ok(t, id, z, `{}`)
	r.step(id, "ask", stepRunning) // started; its question waits for a running task
	r.ok(t, id, w, `{}`)
	r.step(id, "w", stepSucceeded)
	r.settle()
	if st := task.FindStep(r.task(t, id), "y"); st.Status != stepRunning {
		t.Fatalf("y is %v after w, its only dependency, succeeded: ready steps wait for an unrelated approval", st.Status)
	}
}

// TestPlanCheckpointPausedAndResumedTakesItsAnswer: a person pauses a
// task that waits on a checkpoint's question, then resumes it. The resume
// puts the task back to waiting for input, the question still open: the
// answer that follows is the checkpoint's.
func TestPlanCheckpointPausedAndResumedTakesItsAnswer(t *testing.T) {
	r := newHarness(t)
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

// TestPlanCheckpointIsAskedAgainAfterASuspension: a task waiting on a
// checkpoint's question is suspended (its deadline passed), which closes
// the question; nobody declined it. When the suspension is lifted, the
// checkpoint asks again, and the answer to that ends the step.
func TestPlanCheckpointIsAskedAgainAfterASuspension(t *testing.T) {
	r := newHarness(t)
	id := r.planTask(t, "suspend-ask", nil)
	r.runPlan(t, id, &stewardv1.Plan{Version: 1, Ending: stewardv1.PlanEnding_PLAN_ENDING_HAND_BACK, Steps: []*stewardv1.Step{
		{Id: "ship", Kind: &stewardv1.Step_Checkpoint{Checkpoint: &stewardv1.CheckpointStep{Question: "Ship?", Choices: []string{"yes", "no"}}}},
	}})
	r.WaitTask(id, func(tk *stewardv1.Task) bool { return tk.Status == stewardv1.TaskStatus_TASK_STATUS_WAITING_FOR_INPUT })
	r.Append(id, &stewardv1.TaskSuspended{Reason: "deadline passed", Cause: stewardv1.SuspendCause_SUSPEND_CAUSE_DEADLINE})
	r.resume(t, id)
	tk := r.WaitTask(id, func(tk *stewardv1.Task) bool { return tk.Status == stewardv1.TaskStatus_TASK_STATUS_WAITING_FOR_INPUT })
	if st := task.FindStep(tk, "ship"); st.Status != stepRunning || tk.OpenInput.GetQuestion() != "Ship?" {
		t.Fatalf("ship = %v (%s), open input %v after the suspension was lifted: want the question asked again", st.Status, st.Reason, tk.OpenInput)
	}
	if _, err := r.ctl.ProvideInput(context.Background(), rpc.Identity{Principal: "user:a"}, &stewardv1.ProvideInputRequest{TaskId: id, Answer: "yes"}); err != nil {
		t.Fatal(err)
	}
	tk = r.WaitTask(id, func(tk *stewardv1.Task) bool { return task.FindStep(tk, "ship").Status != stepRunning })
	if st := task.FindStep(tk, "ship"); st.Status != stepSucceeded || st.Result.GetStringValue() != "yes" {
		t.Fatalf("ship = %v (%s), result %v: want the answer to the question asked again", st.Status, st.Reason, st.Result)
	}
}
