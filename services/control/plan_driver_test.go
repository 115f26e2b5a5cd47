package control_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/steward-run/steward/pkg/errs"
	"github.com/steward-run/steward/pkg/event"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/rpc"
	"github.com/steward-run/steward/pkg/task"
	"github.com/steward-run/steward/services/control"
)

const (
	stepRunning   = stewardv1.StepStatus_STEP_STATUS_RUNNING
	stepSucceeded = stewardv1.StepStatus_STEP_STATUS_SUCCEEDED
	stepFailed    = stewardv1.StepStatus_STEP_STATUS_FAILED
	stepSkipped   = stewardv1.StepStatus_STEP_STATUS_SKIPPED
	stepPending   = stewardv1.StepStatus_STEP_STATUS_PENDING
)

// act is an action step: id, its dependencies, and its action.
func act(id string, deps []string, tool, target string, exprs map[string]string) *stewardv1.Step {
	return &stewardv1.Step{Id: id, DependsOn: deps, Kind: &stewardv1.Step_Action{Action: &stewardv1.ActionStep{Tool: tool, Target: target, ParamExprs: exprs}}}
}

// runPlan submits p for the task and records governance's allow of it,
// as the plan policy would.
func (r *harness) runPlan(t *testing.T, taskID string, p *stewardv1.Plan) {
	t.Helper()
	tk, _, err := r.submitPlan(taskID, "", p)
	if err != nil {
		t.Fatal(err)
	}
	r.Append(taskID, &stewardv1.PlanEvaluated{Version: tk.Plan.Version, PlanHash: tk.Plan.PlanHash,
		Snapshot: &stewardv1.PolicySnapshot{SnapshotId: "plan-snap", Decision: stewardv1.PolicyDecision_POLICY_DECISION_ALLOW}})
}

// step waits until step id of the task's plan is in status want, and
// returns the task then and the step's last action (nil if none).
func (r *harness) step(taskID, id string, want stewardv1.StepStatus) (*stewardv1.Task, *stewardv1.Action) {
	var st *stewardv1.PlanStepState
	tk := r.WaitTask(taskID, func(tk *stewardv1.Task) bool {
		st = task.FindStep(tk, id)
		return st != nil && st.Status == want
	})
	if n := len(st.ActionIds); n > 0 {
		return tk, task.FindAction(tk, st.ActionIds[n-1])
	}
	return tk, nil
}

// ok runs a step's action to success with result.
func (r *harness) ok(t *testing.T, taskID string, a *stewardv1.Action, result string) {
	t.Helper()
	r.run(t, taskID, a.ActionId, succeeded(), []byte(result), time.Now())
}

// TestPlanDiamondRunsToProduced: a → (b, c) → d. Both branches are
// proposed before either ends; d's parameters are computed from both
// results; when d succeeds the plan ends by marking the task produced.
// Each step's action is proposed in the submitter's name, by Steward.
func TestPlanDiamondRunsToProduced(t *testing.T) {
	r := newHarness(t)
	id := r.planTask(t, "diamond", nil)
	r.runPlan(t, id, &stewardv1.Plan{Version: 1, Ending: stewardv1.PlanEnding_PLAN_ENDING_PRODUCE, Steps: []*stewardv1.Step{
		act("a", nil, "search", "index", nil),
		act("b", []string{"a"}, "search", "left", map[string]string{"q": "steps.a.result.q"}),
		act("c", []string{"a"}, "search", "right", map[string]string{"q": "steps.a.result.q"}),
		act("d", []string{"b", "c"}, "write", "doc", map[string]string{"text": "steps.b.result.text + steps.c.result.text"}),
	}})

	_, a := r.step(id, "a", stepRunning)
	if a.ProposedBy != "agent" || a.PlanStepId != "a" || !strings.HasPrefix(a.ProposalId, "plan-a-") {
		t.Fatalf("a's action = proposed by %q, step %q, proposal %q", a.ProposedBy, a.PlanStepId, a.ProposalId)
	}
	r.ok(t, id, a, `{"q": "incidents"}`)

	_, b := r.step(id, "b", stepRunning)
	tk, c := r.step(id, "c", stepRunning)
	for _, x := range []*stewardv1.Action{b, c} {
		if x := task.FindAction(tk, x.ActionId); x.Status != stewardv1.ActionStatus_ACTION_STATUS_PROPOSED || !strings.Contains(string(x.Request), `"q":"incidents"`) {
			t.Fatalf("branch action %s = %v %s, want proposed with q from a's result", x.ActionId, x.Status, x.Request)
		}
	}
	if got := task.FindStep(tk, "d").Status; got != stepPending {
		t.Fatalf("d is %v before its dependencies ended", got)
	}
	r.ok(t, id, b, `{"text": "left;"}`)
	r.ok(t, id, c, `{"text": "right"}`)

	_, d := r.step(id, "d", stepRunning)
	if !strings.Contains(string(d.Request), `"text":"left;right"`) {
		t.Fatalf("d's request = %s, want the text of both branches", d.Request)
	}
	r.ok(t, id, d, `{}`)
	tk = r.WaitTask(id, func(tk *stewardv1.Task) bool { return len(tk.Acceptance) == 1 })
	if n := r.Count(id, event.TypeTaskProduced); n != 1 {
		t.Fatalf("%d TaskProduced, want 1", n)
	}
	if r.Count(id, event.TypeActionProposed) != 4 || len(tk.Progress.GetRemaining()) != 0 {
		t.Fatalf("proposals %d, remaining %v", r.Count(id, event.TypeActionProposed), tk.Progress.GetRemaining())
	}
	r.redeliver(t)
	if r.Count(id, event.TypeActionProposed) != 4 || r.Count(id, event.TypeTaskProduced) != 1 || r.Count(id, event.TypePlanStepStarted) != 4 {
		t.Fatal("a redelivery of the whole log appended again")
	}
}

// TestPlanWhenFalseSkips: a when that is false skips its step, which
// counts as done: a step that depends on it and tests its status runs. A
// sub-task that cannot be delegated — it asks for more tokens than its
// parent has left — fails its step with a clear reason, and with
// on_failure continue the plan goes on; it hands back to the agent.
func TestPlanWhenFalseSkips(t *testing.T) {
	r := newHarness(t)
	id := r.planTask(t, "skip", nil)
	r.use(t, id, 500, 0) // of 1,000
	sub := validRequest("").Contract
	sub.RiskTier, sub.AllowedTools, sub.Scopes = stewardv1.RiskTier_RISK_TIER_MEDIUM, []string{"search"}, []string{"docs:read"}
	sub.Budget = &stewardv1.Budget{MaxTokens: 600}
	ask := &stewardv1.Step{Id: "ask", OnFailure: stewardv1.OnFailure_ON_FAILURE_CONTINUE,
		Kind: &stewardv1.Step_SubTask{SubTask: &stewardv1.SubTaskStep{Contract: sub, DelegateRef: "agent:sub"}}}
	skipped := act("b", []string{"a"}, "write", "doc", map[string]string{"text": "'never'"})
	skipped.When = "steps.a.result.go == true"
	after := act("c", []string{"b", "ask"}, "search", "index", nil)
	after.When = "steps.b.status == 'skipped' && steps.ask.status == 'failed'"
	r.runPlan(t, id, &stewardv1.Plan{Version: 1, Ending: stewardv1.PlanEnding_PLAN_ENDING_HAND_BACK, Steps: []*stewardv1.Step{
		act("a", nil, "search", "index", nil), skipped, ask, after,
	}})
	tk, _ := r.step(id, "ask", stepFailed)
	if why := task.FindStep(tk, "ask").Reason; !strings.Contains(why, "could not be delegated") || !strings.Contains(why, "max_tokens") {
		t.Fatalf("the sub_task step failed with %q", why)
	}
	_, a := r.step(id, "a", stepRunning)
	r.ok(t, id, a, `{"go": false}`)
	tk, _ = r.step(id, "b", stepSkipped)
	if st := task.FindStep(tk, "b"); len(st.ActionIds) != 0 || !strings.Contains(st.Reason, "when was false") {
		t.Fatalf("b = %+v", st)
	}
	_, c := r.step(id, "c", stepRunning)
	r.ok(t, id, c, `{}`)
	tk, _ = r.step(id, "c", stepSucceeded)
	r.settle()
	if tk = r.task(t, id); tk.Status != stewardv1.TaskStatus_TASK_STATUS_RUNNING || r.Count(id, event.TypeTaskProduced) != 0 {
		t.Fatalf("a plan that hands back left the task %v with %d rounds", tk.Status, len(tk.Acceptance))
	}
}

// TestPlanExpectFails: a result that does not meet its step's expect
// fails the step as a validation failure. With on_failure continue the
// plan goes on; with the default, escalate, the task waits for a person,
// and the steps after it do not start.
func TestPlanExpectFails(t *testing.T) {
	r := newHarness(t)
	id := r.planTask(t, "expect", nil)
	loose := act("check", nil, "search", "index", nil)
	loose.Expect, loose.OnFailure = "result.ok == true", stewardv1.OnFailure_ON_FAILURE_CONTINUE
	strict := act("verify", []string{"check"}, "search", "index", map[string]string{"again": "steps.check.status"})
	strict.Expect = "has(result.id)"
	r.runPlan(t, id, &stewardv1.Plan{Version: 1, Ending: stewardv1.PlanEnding_PLAN_ENDING_PRODUCE, Steps: []*stewardv1.Step{
		loose, strict, act("publish", []string{"verify"}, "write", "doc", map[string]string{"text": "'x'"}),
	}})
	_, a := r.step(id, "check", stepRunning)
	r.ok(t, id, a, `{"ok": false}`)
	tk, _ := r.step(id, "check", stepFailed)
	if why := task.FindStep(tk, "check").Reason; !strings.Contains(why, "validation failure") || !strings.Contains(why, "result.ok == true") {
		t.Fatalf("check failed with %q", why)
	}
	_, v := r.step(id, "verify", stepRunning)
	if !strings.Contains(string(v.Request), `"again":"failed"`) {
		t.Fatalf("verify's request = %s, want check's status", v.Request)
	}
	r.ok(t, id, v, `{"name": "no id"}`)
	r.step(id, "verify", stepFailed)
	tk = r.WaitTask(id, func(tk *stewardv1.Task) bool {
		return tk.Status == stewardv1.TaskStatus_TASK_STATUS_WAITING_FOR_INPUT
	})
	if in := tk.OpenInput; in.GetCause() != stewardv1.NeedsInputCause_NEEDS_INPUT_CAUSE_PLAN_STEP_FAILED || !strings.Contains(in.GetQuestion(), "plan step verify failed") || in.GetActionId() != v.ActionId {
		t.Fatalf("open input = %+v", in)
	}
	r.settle()
	if st := task.FindStep(r.task(t, id), "publish"); st.Status != stepPending || r.Count(id, event.TypeActionProposed) != 2 {
		t.Fatalf("publish = %v after its dependency failed, %d proposals", st.Status, r.Count(id, event.TypeActionProposed))
	}
	// A resume does not ask again.
	r.resume(t, id)
	r.settle()
	if n := r.Count(id, event.TypeTaskNeedsInput); n != 1 {
		t.Fatalf("%d TaskNeedsInput after the resume, want 1", n)
	}
}

// TestPlanCrashAfterProposal: a crash between a step's proposal and the
// record that the step runs it (the reaction fails there, and the event
// is delivered again) proposes nothing twice: the proposal id derived
// from the step and its request finds the action on the log.
func TestPlanCrashAfterProposal(t *testing.T) {
	var calls atomic.Int32
	r := newHarness(t, control.AfterStepProposal(func(step string) error {
		if calls.Add(1) == 1 {
			return errors.New("crash after proposing step " + step)
		}
		return nil
	}))
	id := r.planTask(t, "crash", nil)
	r.runPlan(t, id, &stewardv1.Plan{Version: 1, Ending: stewardv1.PlanEnding_PLAN_ENDING_PRODUCE, Steps: []*stewardv1.Step{
		act("a", nil, "search", "index", nil),
	}})
	tk, a := r.step(id, "a", stepRunning)
	if calls.Load() < 2 || r.Count(id, event.TypeActionProposed) != 1 || len(tk.Actions) != 1 || a.ActionId != tk.Actions[0].ActionId {
		t.Fatalf("hook ran %d times; %d proposals; step runs %s of %d actions", calls.Load(), r.Count(id, event.TypeActionProposed), a.ActionId, len(tk.Actions))
	}
	r.redeliver(t)
	if r.Count(id, event.TypeActionProposed) != 1 || r.Count(id, event.TypePlanStepStarted) != 1 {
		t.Fatal("a redelivery of the whole log proposed or started again")
	}
	r.ok(t, id, a, `{}`)
	r.WaitTask(id, func(tk *stewardv1.Task) bool { return len(tk.Acceptance) == 1 })
}

// TestPlanRevisionKeepsStepInFlight: a revision submitted while a kept
// step's action is in flight keeps that action — nothing is proposed
// again, it runs once — and runs only the new steps; a withdrawn step's
// action that was not permitted yet is withdrawn, and a withdrawn step
// that had not started never runs.
func TestPlanRevisionKeepsStepInFlight(t *testing.T) {
	r := newHarness(t)
	id := r.planTask(t, "revise", nil)
	v1 := &stewardv1.Plan{Version: 1, Ending: stewardv1.PlanEnding_PLAN_ENDING_PRODUCE, Steps: []*stewardv1.Step{
		act("a", nil, "search", "index", nil),
		act("side", nil, "search", "side", nil),
		act("b", []string{"a"}, "write", "doc", map[string]string{"text": "'old'"}),
	}}
	r.runPlan(t, id, v1)
	_, a := r.step(id, "a", stepRunning)
	_, side := r.step(id, "side", stepRunning)
	r.dispatch(t, id, a.ActionId) // a is in flight; side is only proposed

	v2 := &stewardv1.Plan{Version: 2, Ending: stewardv1.PlanEnding_PLAN_ENDING_PRODUCE, Steps: []*stewardv1.Step{
		act("a", nil, "search", "index", nil),
		act("c", []string{"a"}, "write", "doc", map[string]string{"text": "'new'"}),
	}}
	r.runPlan(t, id, v2)
	r.WaitAction(id, side.ActionId, func(x *stewardv1.Action) bool { return x.Status == stewardv1.ActionStatus_ACTION_STATUS_WITHDRAWN })
	tk, kept := r.step(id, "a", stepRunning)
	if kept.ActionId != a.ActionId || tk.Plan.Version != 2 {
		t.Fatalf("step a runs %s under version %d, want %s kept", kept.ActionId, tk.Plan.Version, a.ActionId)
	}
	r.finish(t, id, a.ActionId, succeeded(), []byte(`{}`), time.Now())
	_, c := r.step(id, "c", stepRunning)
	if !strings.Contains(string(c.Request), `"text":"new"`) {
		t.Fatalf("c's request = %s", c.Request)
	}
	r.ok(t, id, c, `{}`)
	tk = r.WaitTask(id, func(tk *stewardv1.Task) bool { return len(tk.Acceptance) == 1 })
	if n := r.Count(id, event.TypeActionProposed); n != 3 {
		t.Fatalf("%d proposals, want 3 (a once, side, c; never b)", n)
	}
	for _, x := range tk.Actions {
		if strings.Contains(string(x.Request), "old") {
			t.Fatalf("the withdrawn step b ran: %s", x.ActionId)
		}
	}
}

// TestPlanFollowsRetries: a step whose action fails transiently under
// RECOVERY_MODE_RETRY stays running on the retry the recovery policy
// proposes — a second attempt of the same step — and succeeds with it; a
// step whose action policy denies fails, saying so, and with on_failure
// continue the plan still ends.
func TestPlanFollowsRetries(t *testing.T) {
	r := newHarness(t)
	id := r.planTaskWith(t, "retry", func(c *stewardv1.TaskContract) {
		c.RecoveryPolicy = &stewardv1.RecoveryPolicy{Mode: stewardv1.RecoveryMode_RECOVERY_MODE_RETRY}
	}, nil)
	deniable := act("risky", nil, "write", "doc", map[string]string{"text": "'x'"})
	deniable.OnFailure = stewardv1.OnFailure_ON_FAILURE_CONTINUE
	r.runPlan(t, id, &stewardv1.Plan{Version: 1, Ending: stewardv1.PlanEnding_PLAN_ENDING_PRODUCE, Steps: []*stewardv1.Step{
		act("a", nil, "search", "index", nil), deniable,
	}})
	_, risky := r.step(id, "risky", stepRunning)
	r.Append(id, &stewardv1.ActionDenied{ActionId: risky.ActionId, SnapshotId: "s", Reasons: []string{"writes need a ticket"}})
	tk, _ := r.step(id, "risky", stepFailed)
	if why := task.FindStep(tk, "risky").Reason; !strings.Contains(why, "denied") || !strings.Contains(why, "writes need a ticket") {
		t.Fatalf("risky failed with %q", why)
	}

	_, first := r.step(id, "a", stepRunning)
	r.run(t, id, first.ActionId, failed(stewardv1.FailureClass_FAILURE_CLASS_TRANSIENT, "503"), nil, time.Now())
	var st *stewardv1.PlanStepState
	tk = r.WaitTask(id, func(tk *stewardv1.Task) bool { st = task.FindStep(tk, "a"); return st.Attempts == 2 })
	retry := task.FindAction(tk, st.ActionIds[1])
	if st.Status != stepRunning || retry.RetryOf != first.ActionId || retry.PlanStepId != "a" {
		t.Fatalf("a = %v; its second action retries %q", st, retry.RetryOf)
	}
	r.ok(t, id, retry, `{}`)
	r.step(id, "a", stepSucceeded)
	r.WaitTask(id, func(tk *stewardv1.Task) bool { return len(tk.Acceptance) == 1 })
}

// TestPlanCompensatesOnFailure: a step that fails with on_failure
// compensate fails the task with compensation, as FailTask with
// compensate does: the succeeded reversible write of an earlier step is
// undone.
func TestPlanCompensatesOnFailure(t *testing.T) {
	r := newHarness(t)
	id := r.planTaskWith(t, "undo", func(c *stewardv1.TaskContract) {
		c.AllowedTools = append(c.AllowedTools, "undo")
	}, nil)
	check := act("check", []string{"save"}, "search", "doc", nil)
	check.Expect, check.OnFailure = "result.found == true", stewardv1.OnFailure_ON_FAILURE_COMPENSATE
	r.runPlan(t, id, &stewardv1.Plan{Version: 1, Ending: stewardv1.PlanEnding_PLAN_ENDING_PRODUCE, Steps: []*stewardv1.Step{
		act("save", nil, "write", "doc", map[string]string{"text": "'draft'"}), check,
	}})
	_, save := r.step(id, "save", stepRunning)
	r.ok(t, id, save, `{"id": "d1"}`)
	_, c := r.step(id, "check", stepRunning)
	r.ok(t, id, c, `{"found": false}`)
	tk := r.WaitTask(id, func(tk *stewardv1.Task) bool { return compensationOf(tk, save.ActionId) != nil })
	if tk.Status != stewardv1.TaskStatus_TASK_STATUS_COMPENSATING || tk.FinalStatus != stewardv1.TaskStatus_TASK_STATUS_FAILED {
		t.Fatalf("task %v, ending as %v", tk.Status, tk.FinalStatus)
	}
}

// TestPlanRevisionKeepsARunningStepsKind: a revision may change what a
// running step asks but not what kind of step it is — the driver follows
// it by what it started, and the fold checks each start (a retry of its
// action, say) against its definition. Changing an action, a wait or a
// sub_task into another kind while it runs is refused, naming the step;
// a change within its kind is taken.
func TestPlanRevisionKeepsARunningStepsKind(t *testing.T) {
	r := newHarness(t)
	id := r.planTask(t, "kinds", nil)
	wait := &stewardv1.Step{Id: "w", Kind: &stewardv1.Step_Wait{Wait: &stewardv1.WaitStep{Wait: &stewardv1.WaitStep_Duration{Duration: durationpb.New(time.Hour)}}}}
	steps := func(a, w, s *stewardv1.Step) *stewardv1.Plan {
		return &stewardv1.Plan{Version: 2, Ending: stewardv1.PlanEnding_PLAN_ENDING_HAND_BACK, Steps: []*stewardv1.Step{a, w, s}}
	}
	v1 := steps(act("a", nil, "search", "index", nil), wait, subStep("s", nil, 100))
	v1.Version = 1
	r.runPlan(t, id, v1)
	r.step(id, "a", stepRunning)
	r.step(id, "w", stepRunning)
	r.step(id, "s", stepRunning)
	waitA := &stewardv1.Step{Id: "a", Kind: wait.Kind}
	for _, c := range []struct {
		name, field string
		plan        *stewardv1.Plan
	}{
		{"action into sub_task", "plan.steps[0]", steps(subStep("a", nil, 100), wait, subStep("s", nil, 100))},
		{"action into wait", "plan.steps[0]", steps(waitA, wait, subStep("s", nil, 100))},
		{"wait into action", "plan.steps[1]", steps(act("a", nil, "search", "index", nil), act("w", nil, "search", "index", nil), subStep("s", nil, 100))},
		{"sub_task into checkpoint", "plan.steps[2]", steps(act("a", nil, "search", "index", nil), wait,
			&stewardv1.Step{Id: "s", Kind: &stewardv1.Step_Checkpoint{Checkpoint: &stewardv1.CheckpointStep{Question: "Go on?"}}})},
	} {
		_, _, err := r.submitPlan(id, "", c.plan)
		var ee *errs.Error
		if !errors.As(err, &ee) || ee.Code != errs.Invalid || ee.Field != c.field || !strings.Contains(ee.Message, "runs as") {
			t.Fatalf("%s: %v", c.name, err)
		}
	}
	if _, _, err := r.submitPlan(id, "", steps(act("a", nil, "search", "other", nil), wait, subStep("s", nil, 100))); err != nil {
		t.Fatalf("a change within its kind: %v", err)
	}
}

// TestPlanRevisionRedoesAFailedStep: after a step fails and the task
// stops for a person, a resume and a revision that changes the failed
// step start it afresh — a new attempt, a new action — while the steps
// that succeeded stay done, and the plan runs on to its end.
func TestPlanRevisionRedoesAFailedStep(t *testing.T) {
	r := newHarness(t)
	id := r.planTask(t, "redo", nil)
	strict := func(expect string) *stewardv1.Step {
		s := act("check", []string{"find"}, "search", "doc", nil)
		s.Expect = expect
		return s
	}
	plan := func(v uint32, expect string) *stewardv1.Plan {
		return &stewardv1.Plan{Version: v, Ending: stewardv1.PlanEnding_PLAN_ENDING_PRODUCE, Steps: []*stewardv1.Step{
			act("find", nil, "search", "index", nil), strict(expect), act("save", []string{"check"}, "write", "doc", map[string]string{"text": "'ok'"}),
		}}
	}
	r.runPlan(t, id, plan(1, "result.count > 1"))
	_, find := r.step(id, "find", stepRunning)
	r.ok(t, id, find, `{}`)
	_, first := r.step(id, "check", stepRunning)
	r.ok(t, id, first, `{"count": 1}`)
	r.WaitTask(id, func(tk *stewardv1.Task) bool { return tk.Status == stewardv1.TaskStatus_TASK_STATUS_WAITING_FOR_INPUT })
	r.resume(t, id)
	r.running(id)

	r.runPlan(t, id, plan(2, "result.count > 0"))
	tk, again := r.step(id, "check", stepRunning)
	if st := task.FindStep(tk, "check"); again.ActionId == first.ActionId || st.Attempts != 2 || st.Version != 2 {
		t.Fatalf("check = %v, running %s (first %s)", st, again.ActionId, first.ActionId)
	}
	if st := task.FindStep(tk, "find"); st.Status != stepSucceeded || len(st.ActionIds) != 1 {
		t.Fatalf("find = %v, want its success kept", st)
	}
	r.ok(t, id, again, `{"count": 1}`)
	_, save := r.step(id, "save", stepRunning)
	r.ok(t, id, save, `{}`)
	r.WaitTask(id, func(tk *stewardv1.Task) bool { return len(tk.Acceptance) == 1 })
	if n := r.Count(id, event.TypeTaskNeedsInput); n != 1 {
		t.Fatalf("%d TaskNeedsInput, want 1", n)
	}
}

// TestPlanWaitEndsOnItsTimer: a wait step runs no action and ends when a
// durable timer says its time has come, even across a restart of the
// plane; a wait until a time already past ends at once. The steps after
// it then run.
func TestPlanWaitEndsOnItsTimer(t *testing.T) {
	r := newHarness(t)
	id := r.planTask(t, "wait", nil)
	wait := func(id string, w *stewardv1.WaitStep) *stewardv1.Step {
		return &stewardv1.Step{Id: id, Kind: &stewardv1.Step_Wait{Wait: w}}
	}
	r.runPlan(t, id, &stewardv1.Plan{Version: 1, Ending: stewardv1.PlanEnding_PLAN_ENDING_PRODUCE, Steps: []*stewardv1.Step{
		wait("past", &stewardv1.WaitStep{Wait: &stewardv1.WaitStep_Until{Until: timestamppb.New(time.Now().Add(-time.Hour))}}),
		wait("cool", &stewardv1.WaitStep{Wait: &stewardv1.WaitStep_Duration{Duration: durationpb.New(time.Second)}}),
		act("go", []string{"past", "cool"}, "search", "index", nil),
	}})
	r.step(id, "past", stepSucceeded)
	tk, _ := r.step(id, "cool", stepRunning)
	if st := task.FindStep(tk, "cool"); st.WaitUntil == nil || len(st.ActionIds) != 0 || len(tk.Actions) != 0 {
		t.Fatalf("cool = %v with %d actions", st, len(tk.Actions))
	}
	r.ctl.Stop()
	r.ctl = control.New(r.Log, r.Logger, r.config())
	r.start(t)
	_, a := r.step(id, "go", stepRunning)
	if st := task.FindStep(r.task(t, id), "cool"); st.Status != stepSucceeded || !st.WaitUntil.AsTime().Before(time.Now()) {
		t.Fatalf("cool = %v", st)
	}
	r.ok(t, id, a, `{}`)
	r.WaitTask(id, func(tk *stewardv1.Task) bool { return len(tk.Acceptance) == 1 })
}

// TestPlanWaitEndsOnItsTimerWithTheClockBehind: the timer is the clock
// that ends a wait. A control plane whose clock runs behind the server's
// (services mode, clock skew) ends the wait when its timer fires, rather
// than wait on for a timer that will not fire again.
func TestPlanWaitEndsOnItsTimerWithTheClockBehind(t *testing.T) {
	r := newHarness(t)
	id := r.planTask(t, "wait-behind", nil)
	r.clock.Advance(-time.Hour)
	r.runPlan(t, id, &stewardv1.Plan{Version: 1, Ending: stewardv1.PlanEnding_PLAN_ENDING_HAND_BACK, Steps: []*stewardv1.Step{
		{Id: "cool", Kind: &stewardv1.Step_Wait{Wait: &stewardv1.WaitStep{Wait: &stewardv1.WaitStep_Until{Until: timestamppb.New(time.Now().Add(time.Second))}}}},
		act("go", []string{"cool"}, "search", "index", nil),
	}})
	r.step(id, "cool", stepRunning)
	r.step(id, "go", stepRunning) // the timer fired; the plane's clock still says an hour to go
	if until := task.FindStep(r.task(t, id), "cool").WaitUntil.AsTime(); !until.After(r.clock.Now()) {
		t.Fatalf("the plane's clock %v is past the wait's end %v: the test proves nothing", r.clock.Now(), until)
	}
}

// TestPlanForeachRunsEachItem: a foreach proposes one action per item of
// an earlier result, all before any ends — a crash in the middle of the
// expansion proposes none twice — checks its expect on each item's
// result, and gives the list of them to the steps after it.
func TestPlanForeachRunsEachItem(t *testing.T) {
	var calls atomic.Int32
	r := newHarness(t, control.AfterStepProposal(func(step string) error {
		if step == "each" && calls.Add(1) == 2 {
			return errors.New("crash after proposing the second item")
		}
		return nil
	}))
	id := r.planTask(t, "foreach", nil)
	each := &stewardv1.Step{Id: "each", DependsOn: []string{"list"}, Expect: "result.ok == true && result.of == item.name",
		Kind: &stewardv1.Step_Foreach{Foreach: &stewardv1.ForeachStep{Over: "steps.list.result.items", MaxItems: 3,
			Body: &stewardv1.StepTemplate{Kind: &stewardv1.StepTemplate_Action{Action: &stewardv1.ActionStep{
				Tool: "search", TargetExpr: "'item/' + item.id", ParamExprs: map[string]string{"q": "item.name"}}}}}}}
	r.runPlan(t, id, &stewardv1.Plan{Version: 1, Ending: stewardv1.PlanEnding_PLAN_ENDING_PRODUCE, Steps: []*stewardv1.Step{
		act("list", nil, "search", "index", nil), each,
		act("count", []string{"each"}, "search", "summary", map[string]string{"q": "string(size(steps.each.result))"}),
	}})
	_, list := r.step(id, "list", stepRunning)
	r.ok(t, id, list, `{"items": [{"id": "1", "name": "a"}, {"id": "2", "name": "b"}, {"id": "3", "name": "c"}]}`)

	tk, _ := r.step(id, "each", stepRunning)
	st := task.FindStep(tk, "each")
	if len(st.ActionIds) != 3 || r.Count(id, event.TypeActionProposed) != 4 || calls.Load() < 4 {
		t.Fatalf("each = %v after %d proposals (hook ran %d times)", st, r.Count(id, event.TypeActionProposed), calls.Load())
	}
	for i, aid := range st.ActionIds {
		a := task.FindAction(tk, aid)
		name := string(rune('a' + i))
		if a.Status != stewardv1.ActionStatus_ACTION_STATUS_PROPOSED || a.Target != "item/"+string(rune('1'+i)) || !strings.Contains(string(a.Request), `"q":"`+name+`"`) {
			t.Fatalf("item %d's action = %v %s %s", i, a.Status, a.Target, a.Request)
		}
		r.ok(t, id, a, `{"ok": true, "of": "`+name+`"}`)
	}
	_, count := r.step(id, "count", stepRunning)
	if !strings.Contains(string(count.Request), `"q":"3"`) {
		t.Fatalf("count's request = %s, want the size of each's result", count.Request)
	}
	r.ok(t, id, count, `{}`)
	r.WaitTask(id, func(tk *stewardv1.Task) bool { return len(tk.Acceptance) == 1 })
	if n := r.Count(id, event.TypeActionProposed); n != 5 {
		t.Fatalf("%d proposals, want 5", n)
	}
}

// TestPlanForeachItemFailsTheStep: an item whose action fails for good
// fails its foreach at once, naming the item; a foreach over an empty
// list succeeds at once, its result [].
func TestPlanForeachItemFailsTheStep(t *testing.T) {
	r := newHarness(t)
	id := r.planTask(t, "foreach-fail", nil)
	foreach := func(id, over string) *stewardv1.Step {
		return &stewardv1.Step{Id: id, OnFailure: stewardv1.OnFailure_ON_FAILURE_CONTINUE,
			Kind: &stewardv1.Step_Foreach{Foreach: &stewardv1.ForeachStep{Over: over, MaxItems: 2,
				Body: &stewardv1.StepTemplate{Kind: &stewardv1.StepTemplate_Action{Action: &stewardv1.ActionStep{
					Tool: "search", TargetExpr: "item"}}}}}}
	}
	after := act("after", []string{"none", "two"}, "search", "x", map[string]string{"q": "string(size(steps.none.result)) + steps.two.status"})
	r.runPlan(t, id, &stewardv1.Plan{Version: 1, Ending: stewardv1.PlanEnding_PLAN_ENDING_HAND_BACK, Steps: []*stewardv1.Step{
		foreach("none", "[]"), foreach("two", "['a', 'b']"), after,
	}})
	r.step(id, "none", stepSucceeded)
	tk, _ := r.step(id, "two", stepRunning)
	items := task.FindStep(tk, "two").ActionIds
	r.run(t, id, items[1], failed(stewardv1.FailureClass_FAILURE_CLASS_DETERMINISTIC, "no such index"), nil, time.Now())
	tk, _ = r.step(id, "two", stepFailed)
	if why := task.FindStep(tk, "two").Reason; !strings.Contains(why, "item 1") || !strings.Contains(why, "no such index") {
		t.Fatalf("two failed with %q", why)
	}
	_, a := r.step(id, "after", stepRunning)
	if !strings.Contains(string(a.Request), `"q":"0failed"`) {
		t.Fatalf("after's request = %s", a.Request)
	}
}

// TestPlanCheckpointAsksAPerson: a checkpoint step asks its question, as
// RequestInput does, and the task waits for input; the answer is the
// step's result, checked by its expect, and read by the steps after it.
// A resume without an answer fails it.
func TestPlanCheckpointAsksAPerson(t *testing.T) {
	r := newHarness(t)
	id := r.planTask(t, "checkpoint", nil)
	ask := func(id string, deps ...string) *stewardv1.Step {
		return &stewardv1.Step{Id: id, DependsOn: deps, Expect: "result == 'approve'", OnFailure: stewardv1.OnFailure_ON_FAILURE_CONTINUE,
			Kind: &stewardv1.Step_Checkpoint{Checkpoint: &stewardv1.CheckpointStep{Question: "Publish?", Choices: []string{"approve", "reject"}}}}
	}
	r.runPlan(t, id, &stewardv1.Plan{Version: 1, Ending: stewardv1.PlanEnding_PLAN_ENDING_HAND_BACK, Steps: []*stewardv1.Step{
		ask("approve"), act("publish", []string{"approve"}, "search", "x", map[string]string{"q": "steps.approve.result"}), ask("again", "publish"),
	}})
	tk := r.WaitTask(id, func(tk *stewardv1.Task) bool { return tk.Status == stewardv1.TaskStatus_TASK_STATUS_WAITING_FOR_INPUT })
	if in := tk.OpenInput; in.GetCause() != stewardv1.NeedsInputCause_NEEDS_INPUT_CAUSE_PLAN_CHECKPOINT || in.GetQuestion() != "Publish?" || len(in.GetChoices()) != 2 {
		t.Fatalf("open input = %v", in)
	}
	if _, err := r.ctl.ProvideInput(context.Background(), rpc.Identity{Principal: "user:a"}, &stewardv1.ProvideInputRequest{TaskId: id, Answer: "approve"}); err != nil {
		t.Fatal(err)
	}
	tk, _ = r.step(id, "approve", stepSucceeded)
	if got := task.FindStep(tk, "approve").GetResult().GetStringValue(); got != "approve" {
		t.Fatalf("approve's result = %q", got)
	}
	_, p := r.step(id, "publish", stepRunning)
	if !strings.Contains(string(p.Request), `"q":"approve"`) {
		t.Fatalf("publish's request = %s", p.Request)
	}
	r.ok(t, id, p, `{}`)
	r.WaitTask(id, func(tk *stewardv1.Task) bool { return tk.Status == stewardv1.TaskStatus_TASK_STATUS_WAITING_FOR_INPUT })
	r.resume(t, id)
	tk, _ = r.step(id, "again", stepFailed)
	if why := task.FindStep(tk, "again").Reason; !strings.Contains(why, "without an answer") {
		t.Fatalf("again failed with %q", why)
	}
}
