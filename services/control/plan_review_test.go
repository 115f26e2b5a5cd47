package control_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/steward-run/steward/pkg/event"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/rpc"
	"github.com/steward-run/steward/pkg/stewardtest"
	"github.com/steward-run/steward/pkg/task"
	"github.com/steward-run/steward/pkg/taskstore"
	"github.com/steward-run/steward/services/control"
)

// Review 17b: failing tests that prove findings in the plan driver.

// TestReviewRevisionBetweenProposalAndStartOrphansAction: a revision that
// lands between a step's proposal and the driver's record of it (a
// concurrent SubmitPlan, or one submitted after a kill -9 and before the
// redelivery) leaves the proposed action owned by no step; nothing
// withdraws it, so governance and execution run a call the plan no longer
// asks for. Each revision here changes or withdraws step a before it is
// recorded as started.
func TestReviewRevisionBetweenProposalAndStartOrphansAction(t *testing.T) {
	for _, tc := range []struct {
		name string
		v2   []*stewardv1.Step
	}{
		{"changed", []*stewardv1.Step{act("a", nil, "search", "elsewhere", nil)}},
		{"withdrawn", []*stewardv1.Step{act("z", nil, "search", "other", nil)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var r *rig
			var id string
			var revised atomic.Bool
			hookErr := make(chan error, 1)
			r = newRig(t, control.AfterStepProposal(func(step string) error {
				if step != "a" || !revised.CompareAndSwap(false, true) {
					return nil
				}
				// The agent's revision lands now, and governance allows it.
				tk, _, err := r.submitPlan(id, "", &stewardv1.Plan{Version: 2, Ending: stewardv1.PlanEnding_PLAN_ENDING_HAND_BACK, Steps: tc.v2})
				if err == nil {
					ev := stewardtest.Event(t, id, &stewardv1.PlanEvaluated{Version: 2, PlanHash: tk.Plan.PlanHash,
						Snapshot: &stewardv1.PolicySnapshot{SnapshotId: "plan-snap-2", Decision: stewardv1.PolicyDecision_POLICY_DECISION_ALLOW}})
					_, err = taskstore.Update(context.Background(), r.Log, id, func(*stewardv1.Task) (*stewardv1.Event, error) { return ev, nil })
				}
				hookErr <- err
				return nil
			}))
			id = r.planTask(t, "orphan-"+tc.name, nil)
			r.runPlan(t, id, &stewardv1.Plan{Version: 1, Ending: stewardv1.PlanEnding_PLAN_ENDING_HAND_BACK, Steps: []*stewardv1.Step{
				act("a", nil, "search", "index", nil),
			}})
			if err := <-hookErr; err != nil {
				t.Fatal(err)
			}
			r.WaitTask(id, func(tk *stewardv1.Task) bool { return tk.Plan.Version == 2 && task.PlanRuns(tk.Plan) })
			r.settle()
			tk := r.task(t, id)
			owned := map[string]bool{}
			for _, st := range append(tk.Plan.Steps, tk.Plan.Retired...) {
				for _, a := range st.ActionIds {
					owned[a] = true
				}
			}
			for _, a := range tk.Actions {
				if !owned[a.ActionId] && a.Status != stewardv1.ActionStatus_ACTION_STATUS_WITHDRAWN {
					t.Errorf("action %s (%s %s, proposal %s) is %v, owned by no step of the plan and not withdrawn: it will be governed and run",
						a.ActionId, a.Tool, a.Target, a.ProposalId, a.Status)
				}
			}
		})
	}
}

// TestReviewUnaskedCheckpointStallsReadySteps: a checkpoint step that
// starts while the task waits for an unrelated action's approval cannot
// ask yet (it asks only in a running task). Its branch of endSteps then
// reports that the pass moved although it appended nothing, so every pass
// ends there: a step that becomes ready meanwhile is not started until
// the approval is decided, though it depends on neither.
func TestReviewUnaskedCheckpointStallsReadySteps(t *testing.T) {
	r := newRig(t)
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

// TestReviewReaddedStepAdoptsItsWithdrawnAction: a step that a revision
// withdraws, and a later revision adds back unchanged, starts afresh
// (attempt 1, the retired state left behind) and so derives the same
// proposal id as its first start: it adopts the action the withdrawal
// withdrew, and fails at once as "withdrawn", never running.
func TestReviewReaddedStepAdoptsItsWithdrawnAction(t *testing.T) {
	r := newRig(t)
	id := r.planTask(t, "readd", nil)
	x := func() *stewardv1.Step { return act("x", nil, "write", "doc", map[string]string{"text": "'x'"}) }
	y := func() *stewardv1.Step { return act("y", nil, "search", "y", nil) }
	plan := func(v uint32, steps ...*stewardv1.Step) *stewardv1.Plan {
		return &stewardv1.Plan{Version: v, Ending: stewardv1.PlanEnding_PLAN_ENDING_HAND_BACK, Steps: steps}
	}
	r.runPlan(t, id, plan(1, x(), y()))
	_, first := r.step(id, "x", stepRunning)
	r.step(id, "y", stepRunning)
	r.runPlan(t, id, plan(2, y()))
	r.WaitAction(id, first.ActionId, func(a *stewardv1.Action) bool { return a.Status == stewardv1.ActionStatus_ACTION_STATUS_WITHDRAWN })
	r.runPlan(t, id, plan(3, x(), y()))
	r.WaitTask(id, func(tk *stewardv1.Task) bool {
		st := task.FindStep(tk, "x")
		return tk.Plan.Version == 3 && st != nil && st.Status != stepPending
	})
	r.settle()
	tk := r.task(t, id)
	st := task.FindStep(tk, "x")
	if st.Status != stepRunning || len(st.ActionIds) != 1 || st.ActionIds[0] == first.ActionId {
		t.Fatalf("x, added back by version 3, is %v (%s) on actions %v; want running a new action, not %s, withdrawn with version 2",
			st.Status, st.Reason, st.ActionIds, first.ActionId)
	}
}

// TestReviewKeptCheckpointAsksAgain: the id of a checkpoint's question
// derives from the plan version in force, so a revision that keeps the
// step after its question was asked (and answered, before the driver
// ended the step: a restart between the two) makes the driver look for a
// question under the new version, find none, and ask the person again,
// ignoring the answer given.
func TestReviewKeptCheckpointAsksAgain(t *testing.T) {
	r := newRig(t)
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

// TestReviewRevisionKeepingAFailedStepEscalatesAgain: the escalation of a
// failed step is "once per failure", and a person's resume lets the plan
// go on without it; but its event id derives from the plan version, so a
// revision that keeps the failed step unchanged (here: adding an
// independent step) stops the task for a person again over the same
// failure.
func TestReviewRevisionKeepingAFailedStepEscalatesAgain(t *testing.T) {
	r := newRig(t)
	id := r.planTask(t, "reescalate", nil)
	strict := act("check", nil, "search", "doc", nil)
	strict.Expect = "result.ok == true"
	plan := func(v uint32, steps ...*stewardv1.Step) *stewardv1.Plan {
		return &stewardv1.Plan{Version: v, Ending: stewardv1.PlanEnding_PLAN_ENDING_HAND_BACK, Steps: steps}
	}
	r.runPlan(t, id, plan(1, strict))
	_, c := r.step(id, "check", stepRunning)
	r.ok(t, id, c, `{"ok": false}`)
	r.WaitTask(id, func(tk *stewardv1.Task) bool { return tk.Status == stewardv1.TaskStatus_TASK_STATUS_WAITING_FOR_INPUT })
	r.resume(t, id)
	r.running(id)
	r.runPlan(t, id, plan(2, strict, act("extra", nil, "search", "extra", nil)))
	r.WaitTask(id, func(tk *stewardv1.Task) bool {
		return tk.Plan.Version == 2 && (task.FindStep(tk, "extra").Status == stepRunning || tk.Status == stewardv1.TaskStatus_TASK_STATUS_WAITING_FOR_INPUT)
	})
	r.settle()
	if n := r.Count(id, event.TypeTaskNeedsInput); n != 1 {
		t.Fatalf("%d TaskNeedsInput for one failure of check, want 1: the revision undid the person's resume (task %v)", n, r.task(t, id).Status)
	}
}

// TestReviewCheckpointTakesAnotherQuestionsAnswer: answerTo takes the
// first answer anywhere after the checkpoint's question, read from the
// log as it is now, not as the pass's fold has it. A question the person
// closed with a resume, followed before the driver's pass (a restart,
// a lagging consumer) by the agent's own question and its answer, ends
// the checkpoint succeeded with that other answer.
func TestReviewCheckpointTakesAnotherQuestionsAnswer(t *testing.T) {
	r := newRig(t)
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

// TestReviewRetryOfAWithdrawnStepsActionRuns: a step withdrawn by a
// revision while its action runs keeps that action to its end; when it
// fails transiently under RECOVERY_MODE_RETRY, the recovery policy
// proposes it again, and nothing withdraws the retry (withdrawRetired
// looks only at the retired step's own action ids): a new call the plan
// no longer asks for is governed and run.
func TestReviewRetryOfAWithdrawnStepsActionRuns(t *testing.T) {
	r := newRig(t)
	id := r.planTaskWith(t, "retired-retry", func(c *stewardv1.TaskContract) {
		c.RecoveryPolicy = &stewardv1.RecoveryPolicy{Mode: stewardv1.RecoveryMode_RECOVERY_MODE_RETRY}
	}, nil)
	plan := func(v uint32, steps ...*stewardv1.Step) *stewardv1.Plan {
		return &stewardv1.Plan{Version: v, Ending: stewardv1.PlanEnding_PLAN_ENDING_HAND_BACK, Steps: steps}
	}
	r.runPlan(t, id, plan(1, act("x", nil, "search", "x", nil)))
	_, a := r.step(id, "x", stepRunning)
	r.dispatch(t, id, a.ActionId) // permitted: the withdrawal lets it run to its end
	r.runPlan(t, id, plan(2, act("y", nil, "search", "y", nil)))
	r.step(id, "y", stepRunning)
	r.finish(t, id, a.ActionId, failed(stewardv1.FailureClass_FAILURE_CLASS_TRANSIENT, "503"), nil, time.Now())
	r.settle()
	for _, x := range r.task(t, id).Actions {
		if x.RetryOf == a.ActionId && x.Status != stewardv1.ActionStatus_ACTION_STATUS_WITHDRAWN {
			t.Fatalf("the retry %s of withdrawn step x's action is %v: it will run, though no step of the plan asks for it", x.ActionId, x.Status)
		}
	}
}

// TestReviewDeniedRevisionStillRunsItsStepsActions: "a plan that policy
// denies runs nothing", but a revision that policy denies leaves the
// actions its kept steps proposed under the version before it, not yet
// permitted, to go on through governance and run: nothing withdraws
// them.
func TestReviewDeniedRevisionStillRunsItsStepsActions(t *testing.T) {
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

// TestReviewChangedSkippedStepStaysSkipped: docs/plans.md says "a changed
// step that had not started starts under its new definition"; a step
// skipped by its when never started, yet a revision that changes its when
// leaves it skipped for good (revised keeps its state as for a started
// step).
func TestReviewChangedSkippedStepStaysSkipped(t *testing.T) {
	r := newRig(t)
	id := r.planTask(t, "reskip", nil)
	gated := func(when string) *stewardv1.Step {
		s := act("b", []string{"a"}, "search", "b", nil)
		s.When = when
		return s
	}
	plan := func(v uint32, when string) *stewardv1.Plan {
		return &stewardv1.Plan{Version: v, Ending: stewardv1.PlanEnding_PLAN_ENDING_HAND_BACK, Steps: []*stewardv1.Step{
			act("a", nil, "search", "a", nil), gated(when), act("c", []string{"a"}, "search", "c", nil),
		}}
	}
	r.runPlan(t, id, plan(1, "steps.a.result.go == true"))
	_, a := r.step(id, "a", stepRunning)
	r.ok(t, id, a, `{"go": false}`)
	r.step(id, "b", stepSkipped)
	r.step(id, "c", stepRunning) // the task runs on: the agent may revise
	r.runPlan(t, id, plan(2, "steps.a.result.go == false"))
	r.WaitTask(id, func(tk *stewardv1.Task) bool { return tk.Plan.Version == 2 && task.PlanRuns(tk.Plan) })
	r.settle()
	tk := r.task(t, id)
	if st := task.FindStep(tk, "b"); st.Status != stepRunning {
		t.Fatalf("b, changed by version 2 after its when skipped it, is %v (%s); the docs say a changed step that had not started starts under its new definition", st.Status, st.Reason)
	}
}
