package control_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/structpb"

	"github.com/steward-run/steward/pkg/errs"
	"github.com/steward-run/steward/pkg/event"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/task"
)

// costing is an outcome that succeeded and cost micros.
func costing(micros int64) *stewardv1.Outcome {
	o := succeeded()
	o.CostMicros = micros
	return o
}

// milestoneCost returns what the task's usage charges to milestone.
func milestoneCost(tk *stewardv1.Task, milestone string) int64 {
	for _, m := range tk.BudgetUsed.GetMilestones() {
		if m.MilestoneId == milestone {
			return m.CostMicros
		}
	}
	return 0
}

// TestPlanStepChargesItsMilestone: the actions of a step with a
// milestone_id — a foreach's items, a failed call and the retry the
// recovery policy proposes — carry the milestone, and what they cost is
// charged to it as well as to the task; a step without one charges the
// task only.
func TestPlanStepChargesItsMilestone(t *testing.T) {
	r := newHarness(t)
	id := r.planTaskWith(t, "milestone", func(c *stewardv1.TaskContract) {
		c.RecoveryPolicy = &stewardv1.RecoveryPolicy{Mode: stewardv1.RecoveryMode_RECOVERY_MODE_RETRY}
	}, nil)
	one := act("one", nil, "search", "index", nil)
	one.MilestoneId = "draft"
	each := &stewardv1.Step{Id: "each", MilestoneId: "draft",
		Kind: &stewardv1.Step_Foreach{Foreach: &stewardv1.ForeachStep{Over: "['a', 'b']", MaxItems: 2,
			Body: &stewardv1.StepTemplate{Kind: &stewardv1.StepTemplate_Action{Action: &stewardv1.ActionStep{Tool: "search", TargetExpr: "item"}}}}}}
	r.runPlan(t, id, &stewardv1.Plan{Version: 1, Ending: stewardv1.PlanEnding_PLAN_ENDING_HAND_BACK, Steps: []*stewardv1.Step{
		one, each, act("free", nil, "search", "other", nil),
	}})

	_, first := r.step(id, "one", stepRunning)
	fail := failed(stewardv1.FailureClass_FAILURE_CLASS_TRANSIENT, "503")
	fail.CostMicros = 10
	r.run(t, id, first.ActionId, fail, nil, time.Now())
	var st *stewardv1.PlanStepState
	tk := r.WaitTask(id, func(tk *stewardv1.Task) bool { st = task.FindStep(tk, "one"); return st.Attempts == 2 })
	retry := task.FindAction(tk, st.ActionIds[1])
	if first.MilestoneId != "draft" || retry.MilestoneId != "draft" {
		t.Fatalf("one's actions are in milestones %q and %q, want draft", first.MilestoneId, retry.MilestoneId)
	}
	r.run(t, id, retry.ActionId, costing(20), []byte(`{}`), time.Now())

	tk, _ = r.step(id, "each", stepRunning)
	for _, aid := range task.FindStep(tk, "each").ActionIds {
		if a := task.FindAction(tk, aid); a.MilestoneId != "draft" {
			t.Fatalf("item action %s is in milestone %q", aid, a.MilestoneId)
		}
		r.run(t, id, aid, costing(100), []byte(`{}`), time.Now())
	}
	_, free := r.step(id, "free", stepRunning)
	if free.MilestoneId != "" {
		t.Fatalf("free's action is in milestone %q, want none", free.MilestoneId)
	}
	r.run(t, id, free.ActionId, costing(1000), []byte(`{}`), time.Now())

	tk = r.WaitTask(id, func(tk *stewardv1.Task) bool { return tk.BudgetUsed.GetCostMicros() == 1230 })
	if got := milestoneCost(tk, "draft"); got != 230 {
		t.Fatalf("milestone draft is charged %d, want 230 (usage %v)", got, tk.BudgetUsed)
	}
}

// TestProposeActionInAMilestone: an agent's own proposal may name a
// milestone of the contract's budget, which its cost is charged to; one
// the budget does not name is InvalidArgument naming milestone_id, with
// nothing appended, and the same proposal id in another milestone is
// AlreadyExists.
func TestProposeActionInAMilestone(t *testing.T) {
	ctx := context.Background()
	r := newHarness(t)
	id := r.planTask(t, "propose-milestone", nil)
	propose := func(proposalID, milestone string) (*stewardv1.Action, error) {
		ps, _ := structpb.NewStruct(nil)
		a, _, err := r.ctl.ProposeAction(ctx, "agent", &stewardv1.ProposeActionRequest{
			TaskId: id, ProposalId: proposalID, Tool: "search", Target: "index", Params: ps, MilestoneId: milestone})
		return a, err
	}
	before := r.Count(id, event.TypeActionProposed)
	var e *errs.Error
	if _, err := propose("p1", "publish"); !errors.As(err, &e) || e.Code != errs.Invalid || e.Field != "milestone_id" {
		t.Fatalf("a milestone the budget lacks: %v, want InvalidArgument naming milestone_id", err)
	}
	if n := r.Count(id, event.TypeActionProposed); n != before {
		t.Fatalf("a refused proposal appended (%d proposals, was %d)", n, before)
	}
	a, err := propose("p1", "draft")
	if err != nil || a.MilestoneId != "draft" {
		t.Fatalf("proposal in draft = %v, %v", a, err)
	}
	if _, err := propose("p1", ""); !errs.Is(err, errs.AlreadyExists) {
		t.Fatalf("the same proposal id outside the milestone: %v, want AlreadyExists", err)
	}
	r.run(t, id, a.ActionId, costing(42), []byte(`{}`), time.Now())
	tk := r.WaitTask(id, func(tk *stewardv1.Task) bool { return tk.BudgetUsed.GetCostMicros() == 42 })
	if got := milestoneCost(tk, "draft"); got != 42 {
		t.Fatalf("milestone draft is charged %d, want 42", got)
	}
}
