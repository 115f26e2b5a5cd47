package control_test

import (
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
