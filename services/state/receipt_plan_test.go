package state_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/steward-run/steward/pkg/event"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/stewardtest"
)

func searchStep(id string, deps ...string) *stewardv1.Step {
	return &stewardv1.Step{Id: id, DependsOn: deps, Kind: &stewardv1.Step_Action{Action: &stewardv1.ActionStep{Tool: "search", Target: id}}}
}

// planned is a running task whose plan's first version waited for an
// approval that never came: a revision replaced it, keeping step a,
// withdrawing b and adding c; policy allowed the revision under another
// bundle revision, step a ran, and step c failed.
func planned() []event.Payload {
	v1 := &stewardv1.Plan{Version: 1, Ending: stewardv1.PlanEnding_PLAN_ENDING_PRODUCE, Steps: []*stewardv1.Step{searchStep("a"), searchStep("b", "a")}}
	v2 := &stewardv1.Plan{Version: 2, Ending: stewardv1.PlanEnding_PLAN_ENDING_PRODUCE, Steps: []*stewardv1.Step{searchStep("a"), searchStep("c", "a")}}
	h := running()
	h = append(h,
		&stewardv1.PlanSubmitted{Plan: v1, PlanHash: "hash-1"},
		&stewardv1.PlanEvaluated{Version: 1, PlanHash: "hash-1", Snapshot: &stewardv1.PolicySnapshot{SnapshotId: "s-plan-1", BundleRevision: "rev-P", Decision: stewardv1.PolicyDecision_POLICY_DECISION_REQUIRE_APPROVAL}},
		&stewardv1.ApprovalRequested{Approval: &stewardv1.Approval{ApprovalId: "apv-plan-1", PlanVersion: 1, PlanHash: "hash-1", RequiredRoles: []string{"authorizer"}}},
		&stewardv1.PlanSubmitted{Plan: v2, PlanHash: "hash-2", Revision: &stewardv1.PlanRevision{ReplacesVersion: 1, Kept: []string{"a"}, Added: []string{"c"}, Withdrawn: []string{"b"}}},
		&stewardv1.PlanEvaluated{Version: 2, PlanHash: "hash-2", Snapshot: &stewardv1.PolicySnapshot{SnapshotId: "s-plan-2", BundleRevision: "rev-Q", Decision: stewardv1.PolicyDecision_POLICY_DECISION_ALLOW}},
	)
	a := act("act-a", "search", "a", "rev-Q")
	a[0].(*stewardv1.ActionProposed).Action.PlanStepId = "a"
	h = append(h, a...)
	return append(h,
		&stewardv1.PlanStepStarted{Version: 2, StepId: "a", ActionId: "act-a", Attempt: 1},
		succeededOutcome("act-a", 1),
		&stewardv1.PlanStepEnded{Version: 2, StepId: "a", Status: stewardv1.StepStatus_STEP_STATUS_SUCCEEDED},
		&stewardv1.PlanStepEnded{Version: 2, StepId: "c", Status: stewardv1.StepStatus_STEP_STATUS_FAILED, Reason: "its when could not be evaluated"},
	)
}

// TestReceiptShowsThePlan: the receipt has every plan version, as
// governance judged it, the approval of the replaced version closed by
// the revision, the plan's policy revisions, and where each step ended.
func TestReceiptShowsThePlan(t *testing.T) {
	env := stewardtest.NewEnv(t)
	env.Append("planned", planned()...)
	q, _ := serveState(t, env)
	got := getReceipt(t, q, "planned")
	r := got.Receipt

	p := r.GetPlan()
	if len(p.GetVersions()) != 2 {
		t.Fatalf("plan versions: %v", p.GetVersions())
	}
	v1, v2 := p.Versions[0], p.Versions[1]
	if v1.Version != 1 || v1.PlanHash != "hash-1" || v1.Governance != stewardv1.PlanGovernance_PLAN_GOVERNANCE_AWAITING_APPROVAL ||
		v1.SnapshotId != "s-plan-1" || v1.PolicyRevision != "rev-P" || v1.ApprovalId != "apv-plan-1" || v1.StepCount != 2 || v1.Revision != nil {
		t.Errorf("version 1: %v", v1)
	}
	if v2.Version != 2 || v2.PlanHash != "hash-2" || v2.Governance != stewardv1.PlanGovernance_PLAN_GOVERNANCE_ALLOWED ||
		v2.PolicyRevision != "rev-Q" || v2.ApprovalId != "" || v2.Revision.GetReplacesVersion() != 1 {
		t.Errorf("version 2: %v", v2)
	}
	if len(r.Approvals) != 1 || r.Approvals[0].ApprovalId != "apv-plan-1" || r.Approvals[0].PlanVersion != 1 ||
		r.Approvals[0].PlanHash != "hash-1" || !r.Approvals[0].Withdrawn || r.Approvals[0].ActionId != "" {
		t.Errorf("approvals: %v", r.Approvals)
	}
	if !slices.Equal(r.PolicyRevisions, []string{"rev-P", "rev-Q"}) {
		t.Errorf("policy revisions %v, want [rev-P rev-Q]", r.PolicyRevisions)
	}
	if len(p.Steps) != 2 || p.Steps[0].StepId != "a" || p.Steps[0].Status != stewardv1.StepStatus_STEP_STATUS_SUCCEEDED ||
		!slices.Equal(p.Steps[0].ActionIds, []string{"act-a"}) || p.Steps[1].StepId != "c" || p.Steps[1].Status != stewardv1.StepStatus_STEP_STATUS_FAILED {
		t.Errorf("steps: %v", p.Steps)
	}
	if len(r.Errors) != 1 || r.Errors[0] != "plan step c failed (plan version 2): its when could not be evaluated" {
		t.Errorf("errors %q: want step c's failure", r.Errors)
	}
	if len(p.Retired) != 1 || p.Retired[0].StepId != "b" || p.Retired[0].Status != stewardv1.StepStatus_STEP_STATUS_WITHDRAWN {
		t.Errorf("retired: %v", p.Retired)
	}

	for _, want := range []string{
		"## Plan",
		"| 1 | `hash-1` | 2 | ",
		"| awaiting approval | `rev-P` | `apv-plan-1` | — |",
		"| allowed | `rev-Q` | — | kept 1, added 1, withdrew 1 |",
		"| `a` | succeeded | 1 | `act-a` | — | — |",
		"| `b` | withdrawn (retired; version 1) |",
		"| `apv-plan-1` | plan version 1 | authorizer | withdrawn (the plan was revised) |",
	} {
		if !strings.Contains(got.Markdown, want) {
			t.Errorf("markdown lacks %q:\n%s", want, got.Markdown)
		}
	}

	// A task without a plan has no plan section.
	env.Append("plain", eventful()...)
	if plain := getReceipt(t, q, "plain"); plain.Receipt.Plan != nil || strings.Contains(plain.Markdown, "## Plan") {
		t.Errorf("a task without a plan: %v", plain.Receipt.Plan)
	}
}
