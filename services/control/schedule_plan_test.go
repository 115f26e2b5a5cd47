package control_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/structpb"

	"github.com/steward-run/steward/pkg/credential"
	"github.com/steward-run/steward/pkg/errs"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/plan"
	"github.com/steward-run/steward/services/control"
)

// planSchedule is an hourly schedule whose template is planTask's
// contract with plan pl.
func planSchedule(pl *stewardv1.Plan) *stewardv1.CreateScheduleRequest {
	req := hourly(stewardv1.CatchUpRule_CATCH_UP_RULE_NONE, 0, stewardv1.OverlapPolicy_OVERLAP_POLICY_QUEUE, 0)
	c := req.Template.Contract
	c.RiskTier = stewardv1.RiskTier_RISK_TIER_MEDIUM
	c.AllowedTools = []string{"search", "write", "net"}
	c.Budget = &stewardv1.Budget{MaxTokens: 1000, Milestones: []*stewardv1.MilestoneBudget{{MilestoneId: "draft", MaxTokens: 500}}}
	req.Template.Plan = pl
	return req
}

// TestScheduleTemplatePlanRunsInEachRun: a template plan is submitted for
// each run once it holds its credential, as its creator, once however
// often that is delivered, and its first step runs; a run whose
// credential does not allow the plan's tools fails, saying why, and the
// schedule records it failed.
func TestScheduleTemplatePlanRunsInEachRun(t *testing.T) {
	r := newSchedules(t)
	ctx := context.Background()
	s := r.create(planSchedule(twoSteps(1)))
	hash, err := plan.Hash(twoSteps(1))
	if err != nil {
		t.Fatal(err)
	}
	run := r.tick(s.ScheduleId, time.Hour).LastTaskId
	tk := r.running(run)
	r.issue(t, tk, credential.Root(tk.Contract, tk.CreatedBy, time.Now(), 0))
	tk, _ = r.step(run, "find", stewardv1.StepStatus_STEP_STATUS_PENDING)
	if tk.Plan.GetPlanHash() != hash || tk.Plan.SubmittedBy != "alice" {
		t.Fatalf("the run's plan is %v, want the template's (hash %s) submitted by its creator", tk.Plan, hash)
	}
	if err := r.ctl.SubmitTemplatePlan(ctx, run); err != nil {
		t.Fatal(err)
	}
	if n := r.planEvents(t, run); n != 1 {
		t.Fatalf("%d plans submitted for the run, want 1", n)
	}
	r.runPlanEvaluated(t, run)
	r.step(run, "find", stewardv1.StepStatus_STEP_STATUS_RUNNING)

	// The next run's credential leaves out write, which the plan calls.
	if _, err := r.ctl.CancelTask(ctx, "alice", &stewardv1.CancelTaskRequest{TaskId: run}); err != nil {
		t.Fatal(err)
	}
	next := r.tick(s.ScheduleId, time.Hour).LastTaskId
	tk = r.running(next)
	c := credential.Root(tk.Contract, tk.CreatedBy, time.Now(), 0)
	c.AllowedTools = slices.DeleteFunc(c.AllowedTools, func(tool string) bool { return tool == "write" })
	r.issue(t, tk, c)
	tk = r.WaitTask(next, func(tk *stewardv1.Task) bool { return tk.Status == stewardv1.TaskStatus_TASK_STATUS_FAILED })
	if r.planEvents(t, next) != 0 {
		t.Fatal("a refused plan was recorded")
	}
	s = r.waitRunEnds(s.ScheduleId, 2)
	if e := s.LastRunEnd; e.TaskId != next || e.Outcome != stewardv1.RunOutcome_RUN_OUTCOME_FAILED || !strings.Contains(e.Reason, "template plan of schedule "+s.ScheduleId+" was refused") {
		t.Fatalf("the schedule says the run ended %v", e)
	}
}

// runPlanEvaluated records governance's approval of the run's plan, as
// the governance plane would.
func (r *schedules) runPlanEvaluated(t *testing.T, taskID string) {
	tk := r.task(t, taskID)
	r.Append(taskID, &stewardv1.PlanEvaluated{Version: tk.Plan.Version, PlanHash: tk.Plan.PlanHash,
		Snapshot: &stewardv1.PolicySnapshot{SnapshotId: "plan-snap", Decision: stewardv1.PolicyDecision_POLICY_DECISION_ALLOW}})
}

// TestCreateScheduleChecksTemplatePlan: a template plan is checked as
// SubmitPlan checks one against the template's contract, its fields named
// under template.plan; one holding a literal its tool marks secret, which
// the schedule would keep in clear, is refused.
func TestCreateScheduleChecksTemplatePlan(t *testing.T) {
	r := newSchedules(t)
	for name, tc := range map[string]struct {
		edit  func(*stewardv1.Plan)
		field string
	}{
		"a tool the contract does not allow": {func(p *stewardv1.Plan) { p.Steps[1].GetAction().Tool = "undo" }, "template.plan.steps[1].action.tool"},
		"a milestone not the contract's":     {func(p *stewardv1.Plan) { p.Steps[0].MilestoneId = "review" }, "template.plan.steps[0].milestone_id"},
		"no version":                         {func(p *stewardv1.Plan) { p.Version = 0 }, "template.plan.version"},
	} {
		t.Run(name, func(t *testing.T) {
			pl := twoSteps(1)
			tc.edit(pl)
			r.refused(planSchedule(pl), tc.field)
		})
	}
	r.register(t, &stewardv1.ToolContract{Name: "login", Version: "1", EffectClass: stewardv1.EffectClass_EFFECT_CLASS_IDEMPOTENT_WRITE,
		DataSensitivity: stewardv1.DataSensitivity_DATA_SENSITIVITY_INTERNAL, ParametersSchema: loginSchema})
	params, err := structpb.NewStruct(map[string]any{"user": "bob", "password": "pw-hunter2"})
	if err != nil {
		t.Fatal(err)
	}
	req := planSchedule(&stewardv1.Plan{Version: 1, Ending: stewardv1.PlanEnding_PLAN_ENDING_PRODUCE, Steps: []*stewardv1.Step{
		{Id: "login", Kind: &stewardv1.Step_Action{Action: &stewardv1.ActionStep{Tool: "login", Target: "acct", Params: params}}}}})
	req.Template.Contract.AllowedTools = append(req.Template.Contract.AllowedTools, "login")
	r.refused(req, "template.plan.steps[0].action.params")
}

// refused wants req refused as invalid, naming field.
func (r *schedules) refused(req *stewardv1.CreateScheduleRequest, field string) {
	r.t.Helper()
	_, _, err := r.ctl.CreateSchedule(context.Background(), "alice", req)
	var e *errs.Error
	if !errors.As(err, &e) || e.Code != errs.Invalid || e.Field != field {
		r.t.Fatalf("err = %v, want invalid %s", err, field)
	}
}

// TestScheduleTemplatePlanWithASubTask: a template plan may delegate a
// sub-task, checked at creation as SubmitPlan checks one against the
// credential a run of the template is issued (its contract's bounds) —
// not refused for want of a credential no schedule holds.
func TestScheduleTemplatePlanWithASubTask(t *testing.T) {
	r := newSchedules(t)
	req := planSchedule(&stewardv1.Plan{Version: 1, Ending: stewardv1.PlanEnding_PLAN_ENDING_PRODUCE, Steps: []*stewardv1.Step{subStep("sub", nil, 100)}})
	req.Template.Contract.Scopes = []string{"docs:read"}
	if _, _, err := r.ctl.CreateSchedule(context.Background(), "alice", req); err != nil {
		t.Fatalf("a template plan delegating a sub-task within the contract: %v", err)
	}
	over := planSchedule(&stewardv1.Plan{Version: 1, Ending: stewardv1.PlanEnding_PLAN_ENDING_PRODUCE, Steps: []*stewardv1.Step{subStep("sub", nil, 100)}})
	over.Template.Contract.Scopes = []string{"mail:send"}
	r.refused(over, "template.plan.steps[0].sub_task.contract.scopes[0]")
}

// TestScheduleTemplatePlanAfterTheAgentsOwn: a run's agent that submits a
// plan of its own while the template's is on its way keeps its run: the
// template's then finds a plan in force and yields, not failing the run.
func TestScheduleTemplatePlanAfterTheAgentsOwn(t *testing.T) {
	var r *schedules
	own := twoSteps(1)
	own.Steps = own.Steps[:1]
	h := newHarness(t, control.BeforeTemplatePlan(func(taskID string) {
		if _, _, err := r.submitPlan(taskID, "", own); err != nil {
			t.Error(err)
		}
	}))
	r = &schedules{harness: h, t: t}
	r.clock.Set(time.Now().Truncate(time.Second))
	s := r.create(planSchedule(twoSteps(1)))
	run := r.tick(s.ScheduleId, time.Hour).LastTaskId
	tk := r.running(run)
	r.issue(t, tk, credential.Root(tk.Contract, tk.CreatedBy, time.Now(), 0))
	want, err := plan.Hash(own)
	if err != nil {
		t.Fatal(err)
	}
	tk = r.WaitTask(run, func(tk *stewardv1.Task) bool { return tk.Plan != nil })
	if err := r.ctl.SubmitTemplatePlan(context.Background(), run); err != nil {
		t.Fatal(err)
	}
	if tk = r.task(t, run); tk.Status != stewardv1.TaskStatus_TASK_STATUS_RUNNING || tk.Plan.GetPlanHash() != want {
		t.Fatalf("run %s is %s with plan %v, want running with its agent's", run, tk.Status, tk.Plan)
	}
}

// TestSubmitPlanOnAPlaneWithoutTools: a plane that takes no plans says
// so first, as it did before a plan's credential was checked apart from
// the plan — not "no credential yet; try again", which would never pass.
func TestSubmitPlanOnAPlaneWithoutTools(t *testing.T) {
	r := idleHarness(t)
	cfg := r.config()
	cfg.Tools = nil
	r.ctl = control.New(r.Log, r.Logger, cfg)
	r.start(t)
	tk, _, err := r.ctl.CreateTask(context.Background(), "agent", validRequest(""))
	if err != nil {
		t.Fatal(err)
	}
	r.running(tk.Contract.TaskId)
	_, _, err = r.submitPlan(tk.Contract.TaskId, "", twoSteps(1))
	if !errs.Is(err, errs.FailedPrecondition) || !strings.Contains(err.Error(), "does not take plans") {
		t.Fatalf("SubmitPlan on a plane without tools: %v", err)
	}
}
