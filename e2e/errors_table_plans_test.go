package e2e_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/durationpb"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// planChecks are the rows of docs/errors.md about SubmitPlan and the
// approval of a plan (docs/plans.md).
func planChecks() map[string]tableCheck {
	ctx := context.Background()
	submit := func(e *harness, taskID string, p *stewardv1.Plan) error {
		_, err := e.agent.tasks.SubmitPlan(ctx, connect.NewRequest(&stewardv1.SubmitPlanRequest{TaskId: taskID, Plan: p}))
		return err
	}
	// edited is searchPlan with a second step, changed by edit.
	edited := func(edit func(s *stewardv1.Step)) *stewardv1.Plan {
		p := searchPlan()
		s := &stewardv1.Step{Id: "more", DependsOn: []string{"find"}, Kind: &stewardv1.Step_Action{Action: &stewardv1.ActionStep{Tool: "search", Target: "index:more"}}}
		edit(s)
		p.Steps = append(p.Steps, s)
		return p
	}
	return map[string]tableCheck{
		"`DelegateTask` or `ProposeAction` with a request or proposal id starting `plan-`, which names what a plan's steps delegate or propose ([plans.md](plans.md#running-a-plan))": func(t *testing.T, e *harness) []error {
			id := e.governed(t)
			errs := e.unchanged(t, id,
				func() error {
					_, err := e.agent.tasks.DelegateTask(ctx, connect.NewRequest(&stewardv1.DelegateTaskRequest{
						ParentTaskId: id, Contract: contract(), DelegateRef: "agent:helper", RequestId: "plan-mine"}))
					return err
				},
				func() error { return e.propose(t, id, "plan-mine", "search", "", map[string]any{"q": "a"}, nil) },
			)
			return []error{alike(t, onField(t, errs[0], "request_id"), onField(t, errs[1], "proposal_id"))}
		},
		"`SubmitPlan` with a cycle, an unknown dependency, a tool outside the contract or its credential or not registered, an expression that does not type-check, a limit broken, a milestone not in the contract, a sub-task contract `DelegateTask` would refuse, or a `param_exprs` entry the tool may mark secret that quotes a literal ([secrets.md](secrets.md#plans))": func(t *testing.T, e *harness) []error {
			id := e.create(t, "table-plan-refusals", contract())
			on := func(field string, p *stewardv1.Plan) func() error {
				return func() error { return onField(t, submit(e, id, p), field) }
			}
			long := searchPlan()
			for i := range 100 {
				long.Steps = append(long.Steps, &stewardv1.Step{Id: fmt.Sprintf("s%d", i), Kind: &stewardv1.Step_Wait{Wait: &stewardv1.WaitStep{}}})
			}
			cycle := edited(func(*stewardv1.Step) {})
			cycle.Steps[0].DependsOn = []string{"more"} // find → more → find
			sub := contract()
			sub.Scopes = []string{"payments:write"}
			return []error{alike(t, e.unchanged(t, id,
				on("plan.steps[1].depends_on[0]", cycle),
				on("plan.steps[1].depends_on[0]", edited(func(s *stewardv1.Step) { s.DependsOn = []string{"fnd"} })),
				on("plan.steps[1].action.tool", edited(func(s *stewardv1.Step) { s.GetAction().Tool = "wire" })),
				on("plan.steps[1].action.tool", edited(func(s *stewardv1.Step) { s.GetAction().ToolVersion = "9.9.9" })),
				on("plan.steps[1].when", edited(func(s *stewardv1.Step) { s.When = "steps.find.status + 1" })),
				on("plan.steps", long),
				on("plan.steps[1].milestone_id", edited(func(s *stewardv1.Step) { s.MilestoneId = "launch" })),
				on("plan.steps[1].sub_task.contract.scopes[0]", edited(func(s *stewardv1.Step) {
					s.Kind = &stewardv1.Step_SubTask{SubTask: &stewardv1.SubTaskStep{Contract: sub, DelegateRef: "agent:helper"}}
				})),
			)...)}
		},
		"`SubmitPlan` of a version the task has with another plan; of a version lower than its current one; for a task that is not running": func(t *testing.T, e *harness) []error {
			// A plan that holds: the task stays running while its
			// versions are tried, whatever its steps would meet.
			holding := func(version uint32, hours int) *stewardv1.Plan {
				return &stewardv1.Plan{Version: version, Ending: stewardv1.PlanEnding_PLAN_ENDING_HAND_BACK, Steps: []*stewardv1.Step{
					{Id: "hold", Kind: &stewardv1.Step_Wait{Wait: &stewardv1.WaitStep{Wait: &stewardv1.WaitStep_Duration{Duration: durationpb.New(time.Duration(hours) * time.Hour)}}}},
				}}
			}
			id := e.create(t, "table-plan-versions", contract())
			for _, v := range []uint32{1, 3} {
				if err := submit(e, id, holding(v, 1)); err != nil {
					t.Fatal(err)
				}
			}
			// Governance's judgement and the hold's start come after the
			// submission: let them land before the calls that must change
			// nothing. The hold may have started under version 1 already,
			// so wait for version 3's own judgement too.
			planGoverned(t, e.agent, id, 3, func(p *stewardv1.PlanState) bool {
				return p.Governance == stewardv1.PlanGovernance_PLAN_GOVERNANCE_ALLOWED &&
					len(p.Steps) == 1 && p.Steps[0].Status == stewardv1.StepStatus_STEP_STATUS_RUNNING
			})
			other, lower := holding(3, 2), holding(2, 1)
			return e.unchanged(t, id,
				func() error { return submit(e, id, other) },
				func() error { return saying(t, submit(e, id, lower), "plan.version 2 is lower") },
				func() error { return saying(t, submit(e, e.paused(t), searchPlan()), "only a running task") },
			)
		},
		"a decision on a plan's approval naming another plan hash; on the approval of a plan version since revised": func(t *testing.T, e *harness) []error {
			k := contract()
			k.AllowedTools = []string{"wire"}
			id := e.create(t, "table-plan-approval", k)
			awaiting := func(p *stewardv1.PlanState) bool { return p.Approval != nil }
			if err := submit(e, id, wires(1, 4)); err != nil {
				t.Fatal(err)
			}
			first := planGoverned(t, e.agent, id, 1, awaiting)
			decide := func(approvalID, hash string) error {
				_, err := e.approver.governance.DecideApproval(ctx, connect.NewRequest(&stewardv1.DecideApprovalRequest{
					ApprovalId: approvalID, PlanHash: hash, Decision: stewardv1.ApprovalDecision_APPROVAL_DECISION_APPROVE}))
				return err
			}
			otherHash := onField(t, decide(first.Approval.ApprovalId, strings.Repeat("0", 64)), "plan_hash")
			if err := submit(e, id, wires(2, 4)); err != nil {
				t.Fatal(err)
			}
			planGoverned(t, e.agent, id, 2, awaiting)
			return []error{otherHash, saying(t, decide(first.Approval.ApprovalId, first.PlanHash), "the plan was revised")}
		},
	}
}
