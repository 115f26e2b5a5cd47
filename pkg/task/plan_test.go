package task_test

import (
	"slices"
	"testing"

	"github.com/steward-run/steward/pkg/errs"
	"github.com/steward-run/steward/pkg/event"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/stewardtest"
	"github.com/steward-run/steward/pkg/task"
)

// planOf is a plan version whose steps, by id, each call search.
func planOf(version uint32, ids ...string) *stewardv1.Plan {
	p := &stewardv1.Plan{Version: version, Ending: stewardv1.PlanEnding_PLAN_ENDING_PRODUCE}
	for _, id := range ids {
		p.Steps = append(p.Steps, &stewardv1.Step{Id: id, Kind: &stewardv1.Step_Action{Action: &stewardv1.ActionStep{Tool: "search", Target: id}}})
	}
	return p
}

// planSubmitted is version's submission, revising prior (nil for the first)
// by the lists given.
func planSubmitted(p *stewardv1.Plan, hash string, rev *stewardv1.PlanRevision) event.Payload {
	return &stewardv1.PlanSubmitted{Plan: p, PlanHash: hash, Revision: rev}
}

func judged(version uint32, hash string, d stewardv1.PolicyDecision) event.Payload {
	return &stewardv1.PlanEvaluated{Version: version, PlanHash: hash, Snapshot: &stewardv1.PolicySnapshot{SnapshotId: "snap", Decision: d}}
}

var (
	planAllow    = stewardv1.PolicyDecision_POLICY_DECISION_ALLOW
	planDeny     = stewardv1.PolicyDecision_POLICY_DECISION_DENY
	planApproval = stewardv1.PolicyDecision_POLICY_DECISION_REQUIRE_APPROVAL
)

// TestFoldKeepsThePlan: a submitted plan is the task's, pending governance,
// every step pending, and its steps are what remains of the task; policy's
// judgement of it is recorded, and a denied plan leaves nothing remaining.
func TestFoldKeepsThePlan(t *testing.T) {
	base := []event.Payload{created(), started(), planSubmitted(planOf(1, "fetch", "publish"), "h1", nil)}
	tk, err := task.Fold(stewardtest.History(t, "t1", base...))
	if err != nil {
		t.Fatal(err)
	}
	p := tk.Plan
	if p.Version != 1 || p.PlanHash != "h1" || p.Governance != stewardv1.PlanGovernance_PLAN_GOVERNANCE_PENDING || p.SubmittedBy != stewardtest.Principal || p.SubmittedAt == nil {
		t.Fatalf("plan = %v", p)
	}
	if len(p.Steps) != 2 || task.FindStep(tk, "fetch").GetStatus() != stewardv1.StepStatus_STEP_STATUS_PENDING || task.FindStep(tk, "publish").GetVersion() != 1 {
		t.Fatalf("steps = %v", p.Steps)
	}
	if got := tk.Progress.GetRemaining(); !slices.Equal(got, []string{"fetch", "publish"}) {
		t.Fatalf("remaining = %v, want the plan's steps", got)
	}
	for _, tc := range []struct {
		decision stewardv1.PolicyDecision
		want     stewardv1.PlanGovernance
		runs     bool
	}{
		{planAllow, stewardv1.PlanGovernance_PLAN_GOVERNANCE_ALLOWED, true},
		{planDeny, stewardv1.PlanGovernance_PLAN_GOVERNANCE_DENIED, false},
		{planApproval, stewardv1.PlanGovernance_PLAN_GOVERNANCE_AWAITING_APPROVAL, false},
	} {
		t.Run(tc.decision.String(), func(t *testing.T) {
			tk, err := task.Fold(stewardtest.History(t, "t1", append(slices.Clip(base), judged(1, "h1", tc.decision))...))
			if err != nil {
				t.Fatal(err)
			}
			if tk.Plan.Governance != tc.want || tk.Plan.Snapshot.GetSnapshotId() != "snap" || task.PlanRuns(tk.Plan) != tc.runs {
				t.Fatalf("plan = %v, want %v", tk.Plan, tc.want)
			}
			if denied := tc.decision == planDeny; denied != (len(tk.Progress.GetRemaining()) == 0) {
				t.Fatalf("remaining = %v after %v", tk.Progress.GetRemaining(), tc.decision)
			}
		})
	}
}

// TestFoldRefusesPlanEvents: each event the fold refuses, as a failed
// precondition that changes nothing.
func TestFoldRefusesPlanEvents(t *testing.T) {
	v1 := planSubmitted(planOf(1, "a", "b"), "h1", nil)
	v2 := planSubmitted(planOf(2, "a", "c"), "h2", &stewardv1.PlanRevision{ReplacesVersion: 1, Kept: []string{"a"}, Added: []string{"c"}, Withdrawn: []string{"b"}})
	tests := []struct {
		name   string
		events []event.Payload
	}{
		{"a plan for a pending task", []event.Payload{created(), planSubmitted(planOf(1, "a"), "h1", nil)}},
		{"a plan for a paused task", []event.Payload{created(), started(), paused(), planSubmitted(planOf(1, "a"), "h1", nil)}},
		{"a plan with no hash", []event.Payload{created(), started(), planSubmitted(planOf(1, "a"), "", nil)}},
		{"a plan with no steps", []event.Payload{created(), started(), planSubmitted(planOf(1), "h1", nil)}},
		{"a first version that says it revises", []event.Payload{created(), started(), planSubmitted(planOf(1, "a"), "h1", &stewardv1.PlanRevision{Added: []string{"a"}})}},
		{"the same version again", []event.Payload{created(), started(), v1, v1}},
		{"a lower version", []event.Payload{created(), started(), v1, v2, planSubmitted(planOf(1, "a"), "h3", nil)}},
		{"a revision of another version", []event.Payload{created(), started(), v1,
			planSubmitted(planOf(3, "a"), "h3", &stewardv1.PlanRevision{ReplacesVersion: 2, Kept: []string{"a"}, Withdrawn: []string{"b"}})}},
		{"a revision that forgets a step", []event.Payload{created(), started(), v1,
			planSubmitted(planOf(2, "a"), "h2", &stewardv1.PlanRevision{ReplacesVersion: 1, Kept: []string{"a"}})}},
		{"a revision that names a step twice", []event.Payload{created(), started(), v1,
			planSubmitted(planOf(2, "a", "b"), "h2", &stewardv1.PlanRevision{ReplacesVersion: 1, Kept: []string{"a", "b"}, Changed: []string{"b"}})}},
		{"a judgement with no plan", []event.Payload{created(), started(), judged(1, "h1", planAllow)}},
		{"a judgement of a replaced version", []event.Payload{created(), started(), v1, v2, judged(1, "h1", planAllow)}},
		{"a judgement of another plan of the version", []event.Payload{created(), started(), v1, judged(1, "h9", planAllow)}},
		{"a judgement that decides nothing", []event.Payload{created(), started(), v1, judged(1, "h1", stewardv1.PolicyDecision_POLICY_DECISION_UNSPECIFIED)}},
		{"a second judgement", []event.Payload{created(), started(), v1, judged(1, "h1", planAllow), judged(1, "h1", planDeny)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := task.Fold(stewardtest.History(t, "t1", tt.events...))
			if !errs.Is(err, errs.FailedPrecondition) {
				t.Fatalf("err = %v, want a failed precondition", err)
			}
		})
	}
}

// TestFoldRevisesThePlan: a revision is in force at once, pending
// governance again, with its revision recorded; a step it leaves out is
// retired as withdrawn; a judgement of the version it replaced is
// refused, and its own is taken.
func TestFoldRevisesThePlan(t *testing.T) {
	rev := &stewardv1.PlanRevision{ReplacesVersion: 1, Kept: []string{"a"}, Changed: []string{"b"}, Added: []string{"d"}, Withdrawn: []string{"c"}}
	events := []event.Payload{created(), started(),
		planSubmitted(planOf(1, "a", "b", "c"), "h1", nil), judged(1, "h1", planAllow),
		planSubmitted(planOf(2, "d", "a", "b"), "h2", rev), judged(2, "h2", planApproval)}
	tk, err := task.Fold(stewardtest.History(t, "t1", events...))
	if err != nil {
		t.Fatal(err)
	}
	p := tk.Plan
	if p.Version != 2 || p.PlanHash != "h2" || p.Governance != stewardv1.PlanGovernance_PLAN_GOVERNANCE_AWAITING_APPROVAL || p.Revision.GetWithdrawn()[0] != "c" {
		t.Fatalf("plan = %v", p)
	}
	var ids []string
	for _, s := range p.Steps {
		ids = append(ids, s.StepId)
		if s.Status != stewardv1.StepStatus_STEP_STATUS_PENDING || s.Version != 2 {
			t.Errorf("step %s = %v, want pending under version 2", s.StepId, s)
		}
	}
	if !slices.Equal(ids, []string{"d", "a", "b"}) {
		t.Fatalf("steps = %v, want the new version's order", ids)
	}
	if len(p.Retired) != 1 || p.Retired[0].StepId != "c" || p.Retired[0].Status != stewardv1.StepStatus_STEP_STATUS_WITHDRAWN || p.Retired[0].Reason == "" {
		t.Fatalf("retired = %v, want c withdrawn", p.Retired)
	}
	if got := tk.Progress.GetRemaining(); !slices.Equal(got, []string{"d", "a", "b"}) {
		t.Fatalf("remaining = %v", got)
	}
}

// TestPlanHoldsTheResult: the agent may not mark the task produced while
// its plan has steps to run.
func TestPlanHoldsTheResult(t *testing.T) {
	events := []event.Payload{created(), started(), planSubmitted(planOf(1, "a"), "h1", nil), &stewardv1.TaskProduced{Round: 1}}
	if _, err := task.Fold(stewardtest.History(t, "t1", events...)); !errs.Is(err, errs.FailedPrecondition) {
		t.Fatalf("err = %v, want a failed precondition", err)
	}
	events = []event.Payload{created(), started(), planSubmitted(planOf(1, "a"), "h1", nil), judged(1, "h1", planDeny), &stewardv1.TaskProduced{Round: 1}}
	if _, err := task.Fold(stewardtest.History(t, "t1", events...)); err != nil {
		t.Fatalf("a denied plan holds nothing: %v", err)
	}
}
