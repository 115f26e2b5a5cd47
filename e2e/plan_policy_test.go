package e2e_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/structpb"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/stewardtest"
)

// wires is a plan of n wires: more than the default plan rule lets start
// without a person once n passes 3.
func wires(version uint32, n int) *stewardv1.Plan {
	p := &stewardv1.Plan{Version: version, Ending: stewardv1.PlanEnding_PLAN_ENDING_PRODUCE}
	for i := range n {
		p.Steps = append(p.Steps, &stewardv1.Step{Id: fmt.Sprintf("pay%d", i), Kind: &stewardv1.Step_Action{Action: &stewardv1.ActionStep{
			Tool: "wire", Target: "acct:42", Params: &structpb.Struct{Fields: map[string]*structpb.Value{"amount": structpb.NewNumberValue(float64(10 + i))}}}}})
	}
	return p
}

// planGoverned waits until version of the task's plan is in force and ok
// holds of it, and returns the plan as GetTask serves it.
func planGoverned(t *testing.T, c authed, taskID string, version uint32, ok func(*stewardv1.PlanState) bool) *stewardv1.PlanState {
	t.Helper()
	return waitServed(t, c.clients, taskID, 10*time.Second, func(tk *stewardv1.Task) (bool, string) {
		p := tk.Plan
		return p.GetVersion() == version && ok(p), fmt.Sprintf("plan version %d is %s", p.GetVersion(), p.GetGovernance())
	}).Plan
}

// TestPlanApprovalBoundToItsHash walks plan policy through the real
// binary: a plan of four wires needs the authorizer's approval of the
// whole plan; a decision naming another hash is refused; a revision
// closes that approval and asks its own; only the approval of the
// revision's hash lets it run.
func TestPlanApprovalBoundToItsHash(t *testing.T) {
	tool := stewardtest.StartTool(t)
	h := startSteward(t, setup{tools: governedTools(tool)})
	ctx := context.Background()
	taskID := governedTask(t, h.agent, "plan-approval")
	submit := func(p *stewardv1.Plan) {
		t.Helper()
		_, err := h.agent.tasks.SubmitPlan(ctx, connect.NewRequest(&stewardv1.SubmitPlanRequest{TaskId: taskID, RequestId: fmt.Sprintf("plan-%d", p.Version), Plan: p}))
		if err != nil {
			t.Fatalf("SubmitPlan version %d: %v", p.Version, err)
		}
	}
	awaiting := func(p *stewardv1.PlanState) bool { return p.Approval != nil }
	submit(wires(1, 4))
	first := planGoverned(t, h.agent, taskID, 1, awaiting)
	if first.Governance != stewardv1.PlanGovernance_PLAN_GOVERNANCE_AWAITING_APPROVAL || first.Approval.PlanHash != first.PlanHash {
		t.Fatalf("plan %v: want it awaiting an approval bound to its hash", first)
	}
	decide := func(approvalID, hash string) error {
		_, err := h.approver.governance.DecideApproval(ctx, connect.NewRequest(&stewardv1.DecideApprovalRequest{
			ApprovalId: approvalID, PlanHash: hash, Decision: stewardv1.ApprovalDecision_APPROVAL_DECISION_APPROVE}))
		return err
	}

	submit(wires(2, 5))
	second := planGoverned(t, h.agent, taskID, 2, awaiting)
	if err := decide(first.Approval.ApprovalId, first.PlanHash); connect.CodeOf(err) != connect.CodeFailedPrecondition {
		t.Fatalf("approving the revised version: %v, want failed_precondition", err)
	}
	if err := decide(second.Approval.ApprovalId, first.PlanHash); connect.CodeOf(err) != connect.CodeInvalidArgument {
		t.Fatalf("the old hash on the revision's approval: %v, want invalid_argument", err)
	}
	if p := planGoverned(t, h.agent, taskID, 2, awaiting); p.Governance != stewardv1.PlanGovernance_PLAN_GOVERNANCE_AWAITING_APPROVAL {
		t.Fatalf("plan %v: want it still awaiting its approval", p)
	} else {
		// Nothing of it has run while it waits.
		for _, s := range p.Steps {
			if s.Attempts != 0 || len(s.ActionIds) != 0 {
				t.Fatalf("step %v started before the plan's approval", s)
			}
		}
		if w := tool.Worked(); len(w) != 0 {
			t.Fatalf("the tool worked before the plan's approval: %+v", w)
		}
	}
	if err := decide(second.Approval.ApprovalId, second.PlanHash); err != nil {
		t.Fatal(err)
	}
	approved := planGoverned(t, h.agent, taskID, 2, func(p *stewardv1.PlanState) bool {
		return p.Governance != stewardv1.PlanGovernance_PLAN_GOVERNANCE_AWAITING_APPROVAL
	})
	// Approved, the plan runs: every step has started (each wire is still
	// judged on its own, as the action it proposes).
	if approved.Governance != stewardv1.PlanGovernance_PLAN_GOVERNANCE_APPROVED {
		t.Fatalf("plan %v: want it approved", approved)
	}
	planGoverned(t, h.agent, taskID, 2, func(p *stewardv1.PlanState) bool {
		for _, s := range p.Steps {
			if s.Attempts == 0 {
				return false
			}
		}
		return true
	})
}
