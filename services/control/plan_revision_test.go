package control_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/steward-run/steward/pkg/event"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/stewardtest"
	"github.com/steward-run/steward/pkg/task"
	"github.com/steward-run/steward/services/control"
)

// Revisions of a running plan (docs/plans.md, "Revisions"): what each
// does to the steps and actions of the version it replaces.

// TestPlanRevisionBetweenProposalAndStartWithdrawsTheAction: a revision
// that lands between a step's proposal and the driver's record of it (a
// concurrent SubmitPlan, or one submitted after a kill -9 and before the
// redelivery) and changes or withdraws the step retires the proposed
// action with it, and the driver withdraws it: no action is left owned
// by no step, to be governed and run. A changed step proposes anew.
func TestPlanRevisionBetweenProposalAndStartWithdrawsTheAction(t *testing.T) {
	for _, tc := range []struct {
		name string
		v2   []*stewardv1.Step
	}{
		{"changed", []*stewardv1.Step{act("a", nil, "search", "elsewhere", nil)}},
		{"withdrawn", []*stewardv1.Step{act("z", nil, "search", "other", nil)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var r *harness
			var id string
			var revised atomic.Bool
			hookErr := make(chan error, 1)
			r = newHarness(t, control.AfterStepProposal(func(step string) error {
				if step != "a" || !revised.CompareAndSwap(false, true) {
					return nil
				}
				// The agent's revision lands now, and governance allows it.
				tk, _, err := r.submitPlan(id, "", &stewardv1.Plan{Version: 2, Ending: stewardv1.PlanEnding_PLAN_ENDING_HAND_BACK, Steps: tc.v2})
				if err == nil {
					ev := stewardtest.Event(t, id, &stewardv1.PlanEvaluated{Version: 2, PlanHash: tk.Plan.PlanHash,
						Snapshot: &stewardv1.PolicySnapshot{SnapshotId: "plan-snap-2", Decision: stewardv1.PolicyDecision_POLICY_DECISION_ALLOW}})
					_, err = r.Tasks.Update(context.Background(), id, func(*stewardv1.Task) (*stewardv1.Event, error) { return ev, nil })
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
				if a.Target == "index" && a.Status != stewardv1.ActionStatus_ACTION_STATUS_WITHDRAWN {
					t.Errorf("version 1's action %s for a is %v, want withdrawn", a.ActionId, a.Status)
				}
			}
			if st := task.FindStep(tk, "a"); tc.name == "changed" && (st.GetStatus() != stepRunning || len(st.ActionIds) != 1 || task.FindAction(tk, st.ActionIds[0]).GetTarget() != "elsewhere") {
				t.Errorf("changed step a = %v: want it running its new definition's action", st)
			}
		})
	}
}

// TestPlanStepAddedBackProposesANewAction: a step that a revision
// withdraws, and a later revision adds back unchanged, starts after its
// retired state's attempts, so its proposal id is a new one: it runs a
// new action, not the one withdrawn with it.
func TestPlanStepAddedBackProposesANewAction(t *testing.T) {
	r := newHarness(t)
	id := r.planTask(t, "readd", nil)
	x := func() *stewardv1.Step { return act("x", nil, "write", "doc", map[string]string{"text": "'x'"}) }
	y := func() *stewardv1.Step { return act("y", nil, "search", "y", nil) }
	plan := handBack
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

// TestPlanWithdrawnStepsFailedActionIsNotRetried: a step withdrawn by a
// revision while its action runs keeps that action to its end; when it
// fails transiently under RECOVERY_MODE_RETRY, the recovery policy does
// not propose it again, since no step of the plan asks for it.
func TestPlanWithdrawnStepsFailedActionIsNotRetried(t *testing.T) {
	r := newHarness(t)
	id := r.retryingTask(t, "retired-retry")
	plan := handBack
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

// TestPlanRevisionKeepingAFailedStepDoesNotEscalateAgain: a failed
// step is escalated once per failure, and a person's resume lets the plan
// go on without it; a revision that keeps the failed step unchanged (here:
// adding an independent step) does not stop the task again over the same
// failure.
func TestPlanRevisionKeepingAFailedStepDoesNotEscalateAgain(t *testing.T) {
	r := newHarness(t)
	id := r.planTask(t, "reescalate", nil)
	strict := act("check", nil, "search", "doc", nil)
	strict.Expect = "result.ok == true"
	plan := handBack
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

// TestPlanChangedSkippedStepStartsAfresh: a step skipped by its when never
// started, so a revision that changes it starts it under its new
// definition (docs/plans.md: "a changed step that had not started starts
// under its new definition").
func TestPlanChangedSkippedStepStartsAfresh(t *testing.T) {
	r := newHarness(t)
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

// TestPlanRetryHeldBackByADeniedPlanIsProposedWhenARevisionRuns: under
// RECOVERY_MODE_RETRY, step x's permitted action fails transiently while
// a denied revision is in force, so the recovery policy holds its retry
// back. The agent's next revision keeps x and is allowed: the retry owed
// is proposed then, and x follows it to its end.
func TestPlanRetryHeldBackByADeniedPlanIsProposedWhenARevisionRuns(t *testing.T) {
	r := newHarness(t)
	id := r.retryingTask(t, "denied-retry")
	x := act("x", nil, "search", "x", nil)
	plan := handBack
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

// TestPlanEachFailureOfAChangedStepEscalates: step s fails before it
// starts (its parameters cannot be evaluated) under definition A, and the
// task waits for a person, who resumes it. The agent changes s to B,
// which fails the same way: asked again. Changed back to A, it fails a
// third time, at the same attempt (it never started): a new failure,
// under a new version, asked about again — once per failure.
func TestPlanEachFailureOfAChangedStepEscalates(t *testing.T) {
	r := newHarness(t)
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

// TestPlanHeldRetryWaitsForTheRevisionsApproval: x's action fails
// transiently while a denied revision is in force, so its retry is held
// back. The next revision keeps x and needs an approval: the retry waits
// for it, and nothing of the plan runs before.
func TestPlanHeldRetryWaitsForTheRevisionsApproval(t *testing.T) {
	r := newHarness(t)
	id := r.retryingTask(t, "denied-then-approval")
	x := act("x", nil, "search", "x", nil)
	plan := handBack
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

// TestPlanHeldRetryOfAChangedStepIsNotTheOldRequest: a retry held back
// by a denied revision is not proposed on the old request once a later
// revision, which changed the step, runs: the step starts afresh.
func TestPlanHeldRetryOfAChangedStepIsNotTheOldRequest(t *testing.T) {
	r := newHarness(t)
	id := r.retryingTask(t, "denied-then-changed")
	plan := handBack
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

// TestPlanRetryOfAChangedRunningStepIsNotTheOldRequest: a revision
// changes x while its action is in flight; the action then fails
// transiently. The recovery policy does not propose the old request
// again: x starts afresh under its new definition.
func TestPlanRetryOfAChangedRunningStepIsNotTheOldRequest(t *testing.T) {
	r := newHarness(t)
	id := r.retryingTask(t, "changed-in-flight")
	plan := handBack
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

// retryingTask is a plan task whose recovery policy retries a failure.
func (r *harness) retryingTask(t *testing.T, requestID string) string {
	t.Helper()
	return r.planTaskWith(t, requestID, func(c *stewardv1.TaskContract) {
		c.RecoveryPolicy = &stewardv1.RecoveryPolicy{Mode: stewardv1.RecoveryMode_RECOVERY_MODE_RETRY}
	}, nil)
}

// handBack is version v of a plan of steps that hands the task back when
// it is done.
func handBack(v uint32, steps ...*stewardv1.Step) *stewardv1.Plan {
	return &stewardv1.Plan{Version: v, Ending: stewardv1.PlanEnding_PLAN_ENDING_HAND_BACK, Steps: steps}
}
