package control_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/steward-run/steward/pkg/access"
	"github.com/steward-run/steward/pkg/credential"
	"github.com/steward-run/steward/pkg/errs"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/gen/steward/v1/stewardv1connect"
	"github.com/steward-run/steward/pkg/plan"
	"github.com/steward-run/steward/pkg/rpc"
)

// planTask creates a running task that allows search, write and net, with
// a milestone and scopes to delegate, and issues its credential, narrowed
// by narrow (nil: the contract's bounds).
func (r *harness) planTask(t *testing.T, requestID string, narrow func(*stewardv1.TaskCredential)) string {
	t.Helper()
	return r.planTaskWith(t, requestID, nil, narrow)
}

// planTaskWith is planTask with the contract changed by edit first.
func (r *harness) planTaskWith(t *testing.T, requestID string, edit func(*stewardv1.TaskContract), narrow func(*stewardv1.TaskCredential)) string {
	t.Helper()
	req := validRequest(requestID)
	req.Contract.RiskTier = stewardv1.RiskTier_RISK_TIER_MEDIUM
	req.Contract.AllowedTools = []string{"search", "write", "net"}
	req.Contract.Scopes = []string{"docs:read"}
	req.Contract.Budget = &stewardv1.Budget{MaxTokens: 1000, Milestones: []*stewardv1.MilestoneBudget{{MilestoneId: "draft", MaxTokens: 500}}}
	if edit != nil {
		edit(req.Contract)
	}
	tk, _, err := r.ctl.CreateTask(context.Background(), "agent", req)
	if err != nil {
		t.Fatal(err)
	}
	c := credential.Root(tk.Contract, tk.CreatedBy, time.Now(), 0)
	if narrow != nil {
		narrow(c)
	}
	r.issue(t, tk, c)
	id := tk.Contract.TaskId
	r.running(id)
	return id
}

// twoSteps is a plan that searches, then writes what it found.
func twoSteps(version uint32) *stewardv1.Plan {
	return &stewardv1.Plan{Version: version, Ending: stewardv1.PlanEnding_PLAN_ENDING_PRODUCE, Steps: []*stewardv1.Step{
		{Id: "find", MilestoneId: "draft", Kind: &stewardv1.Step_Action{Action: &stewardv1.ActionStep{Tool: "search", Target: "index"}}},
		{Id: "save", DependsOn: []string{"find"}, When: "steps.find.status == 'succeeded'",
			Kind: &stewardv1.Step_Action{Action: &stewardv1.ActionStep{Tool: "write", Target: "doc", ParamExprs: map[string]string{"text": "string(steps.find.result)"}}}},
	}}
}

func (r *harness) submitPlan(taskID, requestID string, p *stewardv1.Plan) (*stewardv1.Task, bool, error) {
	return r.ctl.SubmitPlan(context.Background(), "agent", &stewardv1.SubmitPlanRequest{TaskId: taskID, Plan: p, RequestId: requestID})
}

// planEvents counts the PlanSubmitted events on the task's log.
func (r *harness) planEvents(t *testing.T, taskID string) int {
	t.Helper()
	return r.countWhere(t, taskID, func(ev *stewardv1.Event) bool { return ev.GetPlanSubmitted() != nil })
}

// countWhere counts the events on the task's log that match.
func (r *harness) countWhere(t *testing.T, taskID string, match func(*stewardv1.Event) bool) int {
	t.Helper()
	recs, err := r.Log.Read(context.Background(), taskID)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, rec := range recs {
		if match(rec.Event) {
			n++
		}
	}
	return n
}

// TestSubmitPlanRecordsIt: a plan is recorded once, with its hash, pending
// governance, every step pending; the same plan again, with or without
// its request id, appends nothing and answers created false.
func TestSubmitPlanRecordsIt(t *testing.T) {
	r := newHarness(t)
	id := r.planTask(t, "plan", nil)
	tk, created, err := r.submitPlan(id, "plan-1", twoSteps(1))
	if err != nil || !created {
		t.Fatalf("created = %t, err = %v", created, err)
	}
	hash, err := plan.Hash(twoSteps(1))
	if err != nil {
		t.Fatal(err)
	}
	p := tk.Plan
	if p.GetVersion() != 1 || p.PlanHash != hash || p.Governance != stewardv1.PlanGovernance_PLAN_GOVERNANCE_PENDING || p.SubmittedBy != "agent" || p.Revision != nil {
		t.Fatalf("plan = %v", p)
	}
	if len(p.Steps) != 2 || p.Steps[0].Status != stewardv1.StepStatus_STEP_STATUS_PENDING || !proto.Equal(p.Plan, twoSteps(1)) {
		t.Fatalf("plan = %v", p)
	}
	for _, retry := range []string{"plan-1", "", "plan-1-again"} {
		tk, created, err := r.submitPlan(id, retry, twoSteps(1))
		if err != nil || created || tk.Plan.GetPlanHash() != hash {
			t.Fatalf("retry %q: created = %t, err = %v", retry, created, err)
		}
	}
	if n := r.planEvents(t, id); n != 1 {
		t.Fatalf("%d plans recorded, want 1", n)
	}
	// The request id is spent on this plan: another with it is refused.
	other := twoSteps(2)
	if _, _, err := r.submitPlan(id, "plan-1", other); !errs.Is(err, errs.AlreadyExists) {
		t.Fatalf("request id reused: err = %v, want already exists", err)
	}
}

// TestSubmitPlanVersions: versions only go up; a version recorded with
// another plan is AlreadyExists, a retry of one since revised is answered
// as recorded, and a revision records what it did to the version before.
func TestSubmitPlanVersions(t *testing.T) {
	r := newHarness(t)
	id := r.planTask(t, "versions", nil)
	if _, _, err := r.submitPlan(id, "", twoSteps(1)); err != nil {
		t.Fatal(err)
	}
	other := twoSteps(1)
	other.Steps[0].GetAction().Target = "other-index"
	if _, _, err := r.submitPlan(id, "", other); !errs.Is(err, errs.AlreadyExists) {
		t.Fatalf("same version, another plan: err = %v, want already exists", err)
	}
	// Version 3: find changed, save kept, check added; nothing withdrawn.
	v3 := twoSteps(3)
	v3.Steps[0].GetAction().Target = "other-index"
	v3.Steps = append(v3.Steps, &stewardv1.Step{Id: "check", DependsOn: []string{"save"},
		Kind: &stewardv1.Step_Checkpoint{Checkpoint: &stewardv1.CheckpointStep{Question: "Good?"}}})
	tk, created, err := r.submitPlan(id, "", v3)
	if err != nil || !created {
		t.Fatalf("revision: created = %t, err = %v", created, err)
	}
	want := &stewardv1.PlanRevision{ReplacesVersion: 1, Kept: []string{"save"}, Changed: []string{"find"}, Added: []string{"check"}}
	if !proto.Equal(tk.Plan.Revision, want) {
		t.Fatalf("revision = %v, want %v", tk.Plan.Revision, want)
	}
	// Version 4 withdraws check.
	tk, _, err = r.submitPlan(id, "", twoSteps(4))
	if err != nil {
		t.Fatal(err)
	}
	if w := tk.Plan.Revision.GetWithdrawn(); !slices.Equal(w, []string{"check"}) || tk.Plan.Retired[0].Status != stewardv1.StepStatus_STEP_STATUS_WITHDRAWN {
		t.Fatalf("revision = %v, retired = %v", tk.Plan.Revision, tk.Plan.Retired)
	}
	// A late retry of version 1 is answered with the task as it is.
	if tk, created, err := r.submitPlan(id, "", twoSteps(1)); err != nil || created || tk.Plan.Version != 4 {
		t.Fatalf("late retry: created = %t, err = %v", created, err)
	}
	if _, _, err := r.submitPlan(id, "", other); !errs.Is(err, errs.AlreadyExists) {
		t.Fatalf("version 1, another plan, after revisions: err = %v, want already exists", err)
	}
	if _, _, err := r.submitPlan(id, "", twoSteps(2)); !errs.Is(err, errs.FailedPrecondition) || !strings.Contains(err.Error(), "plan.version 2 is lower") {
		t.Fatalf("a lower version: err = %v, want a failed precondition", err)
	}
	if n := r.planEvents(t, id); n != 3 {
		t.Fatalf("%d plans recorded, want 3", n)
	}
}

// TestSubmitPlanRefusals: each refusal names the field, as the client
// spells it, and records nothing.
func TestSubmitPlanRefusals(t *testing.T) {
	r := newHarness(t)
	id := r.planTask(t, "refusals", nil)
	narrowed := r.planTask(t, "narrowed", func(c *stewardv1.TaskCredential) { c.AllowedTools = []string{"search"} })
	r.register(t, &stewardv1.ToolContract{Name: "late", Version: "1", EffectClass: stewardv1.EffectClass_EFFECT_CLASS_READ, DataSensitivity: stewardv1.DataSensitivity_DATA_SENSITIVITY_INTERNAL})
	sub := func() *stewardv1.SubTaskStep {
		c := validRequest("").Contract
		c.RiskTier = stewardv1.RiskTier_RISK_TIER_MEDIUM
		c.AllowedTools, c.Scopes = []string{"search"}, []string{"docs:read"}
		return &stewardv1.SubTaskStep{Contract: c, DelegateRef: "agent:sub"}
	}
	step := func(edit func(*stewardv1.Step)) *stewardv1.Plan {
		p := twoSteps(1)
		edit(p.Steps[0])
		return p
	}
	tests := []struct {
		name   string
		taskID string
		plan   *stewardv1.Plan
		field  string
	}{
		{"no plan", id, nil, "plan"},
		{"no version", id, step(func(*stewardv1.Step) {}), ""},
		{"a cycle", id, step(func(s *stewardv1.Step) { s.DependsOn = []string{"save"} }), "plan.steps[1].depends_on[0]"},
		{"an unknown dependency", id, step(func(s *stewardv1.Step) { s.DependsOn = []string{"fnd"} }), "plan.steps[0].depends_on[0]"},
		{"a tool outside the contract", id, step(func(s *stewardv1.Step) { s.GetAction().Tool = "undo" }), "plan.steps[0].action.tool"},
		{"a tool outside the credential", narrowed, twoSteps(1), "plan.steps[1].action.tool"},
		{"a rationale the proposal would refuse", id, step(func(s *stewardv1.Step) {
			s.GetAction().Rationale = &stewardv1.ActionRationale{ExpectedImpact: "pays\xffout"}
		}), "plan.steps[0].action.rationale.expected_impact"},
		{"a tool not registered", id, step(func(s *stewardv1.Step) { s.GetAction().Tool, s.GetAction().ToolVersion = "search", "9" }), "plan.steps[0].action.tool"},
		{"a retry policy raised", id, step(func(s *stewardv1.Step) {
			s.GetAction().Tool, s.GetAction().RetryPolicy = "net", &stewardv1.RetryPolicy{MaxAttempts: 9}
		}), "plan.steps[0].action.retry_policy.max_attempts"},
		{"a type error", id, step(func(s *stewardv1.Step) { s.When = "1 + 1" }), "plan.steps[0].when"},
		{"an unknown milestone", id, step(func(s *stewardv1.Step) { s.MilestoneId = "publish" }), "plan.steps[0].milestone_id"},
		{"a sub-task widening scopes", id, step(func(s *stewardv1.Step) {
			st := sub()
			st.Contract.Scopes = []string{"docs:write"}
			s.Kind = &stewardv1.Step_SubTask{SubTask: st}
		}), "plan.steps[0].sub_task.contract.scopes[0]"},
		{"a sub-task contract missing its intent", id, step(func(s *stewardv1.Step) {
			st := sub()
			st.Contract.Intent = ""
			s.Kind = &stewardv1.Step_SubTask{SubTask: st}
		}), "plan.steps[0].sub_task.contract.intent"},
		{"a sub-task contract naming its task", id, step(func(s *stewardv1.Step) {
			st := sub()
			st.Contract.TaskId = "t"
			s.Kind = &stewardv1.Step_SubTask{SubTask: st}
		}), "plan.steps[0].sub_task.contract.task_id"},
		{"a sub-task contract lowering the risk tier", id, step(func(s *stewardv1.Step) {
			st := sub()
			st.Contract.RiskTier = stewardv1.RiskTier_RISK_TIER_LOW
			s.Kind = &stewardv1.Step_SubTask{SubTask: st}
		}), "plan.steps[0].sub_task.contract.risk_tier"},
		{"a sub-task taking no share of the tokens the task limits", id, step(func(s *stewardv1.Step) {
			st := sub()
			st.Contract.Budget = nil
			s.Kind = &stewardv1.Step_SubTask{SubTask: st}
		}), "plan.steps[0].sub_task.contract.budget.max_tokens"},
		{"a foreach's sub-task over budget", id, step(func(s *stewardv1.Step) {
			st := sub()
			st.Contract.Budget = &stewardv1.Budget{MaxTokens: 5000}
			s.Kind = &stewardv1.Step_Foreach{Foreach: &stewardv1.ForeachStep{Over: "[1, 2]", MaxItems: 2,
				Body: &stewardv1.StepTemplate{Kind: &stewardv1.StepTemplate_SubTask{SubTask: st}}}}
		}), "plan.steps[0].foreach.body.sub_task.contract.budget.max_tokens"},
	}
	// No version: the plan's own field.
	tests[1].plan.Version, tests[1].field = 0, "plan.version"
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := r.last(t)
			_, _, err := r.submitPlan(tt.taskID, "", tt.plan)
			var e *errs.Error
			if !errors.As(err, &e) || e.Code != errs.Invalid || e.Field != tt.field {
				t.Fatalf("err = %v, want invalid %s", err, tt.field)
			}
			if r.last(t) != before {
				t.Fatal("a refused plan appended something")
			}
		})
	}
}

// TestSubmitPlanNeedsARunningTask: a task must be active, and hold a
// credential that stands, to take a plan.
func TestSubmitPlanNeedsARunningTask(t *testing.T) {
	r := newHarness(t)
	id := r.planTask(t, "paused", nil)
	if _, err := r.ctl.PauseTask(context.Background(), rpc.Identity{Principal: "agent"}, &stewardv1.PauseTaskRequest{TaskId: id}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := r.submitPlan(id, "", twoSteps(1)); !errs.Is(err, errs.FailedPrecondition) || !strings.Contains(err.Error(), "only a running task") {
		t.Fatalf("paused: err = %v, want a failed precondition", err)
	}
	tk, _, err := r.ctl.CreateTask(context.Background(), "agent", validRequest("uncredentialed"))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := r.submitPlan(tk.Contract.TaskId, "", twoSteps(1)); !errs.Is(err, errs.FailedPrecondition) || !strings.Contains(err.Error(), "no credential yet") {
		t.Fatalf("no credential: err = %v, want a failed precondition", err)
	}

	// A credential that cannot back the plan's actions: revoked, expired,
	// or revoked up the task's delegation chain.
	revoked := r.planTask(t, "revoked", nil)
	r.Append(revoked, &stewardv1.CredentialRevoked{CredentialId: r.task(t, revoked).Credential.Credential.CredentialId, Reason: "leaked"})
	expired := r.planTask(t, "expired", func(c *stewardv1.TaskCredential) { c.ExpiresAt = timestamppb.New(time.Now().Add(-time.Minute)) })
	lead := r.planTask(t, "lead", nil)
	sub, _, err := r.ctl.DelegateTask(context.Background(), "agent", &stewardv1.DelegateTaskRequest{ParentTaskId: lead, Contract: subContract(), DelegateRef: "agent:sub"})
	if err != nil {
		t.Fatal(err)
	}
	r.issue(t, sub, credential.Delegated(r.task(t, lead).Credential.Credential, sub.Contract, "agent:sub", time.Now()))
	r.running(sub.Contract.TaskId)
	r.Append(lead, &stewardv1.CredentialRevoked{CredentialId: r.task(t, lead).Credential.Credential.CredentialId, Reason: "stop all"})
	for id, want := range map[string]string{revoked: "revoked (leaked)", expired: "expired at", sub.Contract.TaskId: "was revoked (stop all)"} {
		seq := r.last(t)
		if _, _, err := r.submitPlan(id, "", twoSteps(1)); !errs.Is(err, errs.FailedPrecondition) || !strings.Contains(err.Error(), want) {
			t.Errorf("task %s: err = %v, want a failed precondition saying %q", id, err, want)
		}
		if r.last(t) != seq {
			t.Errorf("task %s: a refused plan appended events", id)
		}
	}
}

// TestSubmitPlanIsTheAgents: only the task's agent may submit its plan
// (the role table, checked at the edge for every plane's RPCs).
func TestSubmitPlanIsTheAgents(t *testing.T) {
	rule, ok := access.For(stewardv1connect.TaskServiceSubmitPlanProcedure)
	if !ok || rule.Group != access.Work || rule.Parties != access.Agent || len(rule.Roles) != 0 {
		t.Fatalf("rule = %+v, want work by the task's agent only", rule)
	}
}
