package state_test

import (
	"strings"
	"testing"

	"github.com/steward-run/steward/pkg/event"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/stewardtest"
	"github.com/steward-run/steward/services/state"
)

// warned builds the receipt of payloads and returns its warnings by kind,
// each kind's abouts joined by spaces.
func warned(t *testing.T, payloads ...event.Payload) (*stewardv1.Receipt, map[stewardv1.ReceiptWarningKind]string) {
	t.Helper()
	return warnedOf(t, stewardtest.History(t, "warn", payloads...))
}

// warnedOf is warned of a history.
func warnedOf(t *testing.T, recs []*stewardv1.EventRecord) (*stewardv1.Receipt, map[stewardv1.ReceiptWarningKind]string) {
	t.Helper()
	r, err := state.BuildReceipt(recs)
	if err != nil {
		t.Fatal(err)
	}
	found := map[stewardv1.ReceiptWarningKind]string{}
	for _, w := range r.Warnings {
		found[w.Kind] = strings.TrimSpace(found[w.Kind] + " " + w.About)
	}
	return r, found
}

// TestReceiptWarnsOfWhatIsUnresolved: a contract with no criteria, a
// model swapped between decisions (no fallback declares it), an auditor's finding, a question
// nobody answered and a budget past 80 % are each a warning naming what
// it is about; a 50 % alert is not; the section comes right after the
// summary.
func TestReceiptWarnsOfWhatIsUnresolved(t *testing.T) {
	k := contract(1)
	k.Budget = &stewardv1.Budget{MaxCostMicros: 100}
	r, found := warned(t,
		&stewardv1.TaskCreated{Contract: k}, &stewardv1.TaskStarted{},
		reportedDecision("d1", "", 10, 40),
		&stewardv1.BudgetAlerted{Dimension: "cost", Percent: 50, Used: 40, Limit: 100},
		&stewardv1.DecisionRecorded{Decision: &stewardv1.Decision{DecisionId: "d2", LedTo: &stewardv1.Decision_NoAction{NoAction: &stewardv1.NoAction{}},
			Call: &stewardv1.ModelCall{Provider: "openai", ModelId: "gpt-b", TokensIn: 5, CostMicros: 45, Provenance: stewardv1.Provenance_PROVENANCE_REPORTED}}},
		&stewardv1.BudgetAlerted{Dimension: "cost", Percent: 80, Used: 85, Limit: 100},
		&stewardv1.FindingRecorded{Finding: &stewardv1.Finding{FindingId: "f-1", Kind: stewardv1.FindingKind_FINDING_KIND_POLICY_VIOLATION, Description: "no ticket"}},
		&stewardv1.TaskNeedsInput{Cause: stewardv1.NeedsInputCause_NEEDS_INPUT_CAUSE_ASKED, Question: "Which region?"},
	)
	for kind, about := range map[stewardv1.ReceiptWarningKind]string{
		stewardv1.ReceiptWarningKind_RECEIPT_WARNING_KIND_CHECK_NOT_EVALUATED: "contract.acceptance_criteria",
		stewardv1.ReceiptWarningKind_RECEIPT_WARNING_KIND_FALLBACK:            "d2",
		stewardv1.ReceiptWarningKind_RECEIPT_WARNING_KIND_FINDING:             "f-1",
		stewardv1.ReceiptWarningKind_RECEIPT_WARNING_KIND_BUDGET_ALERT:        "cost:80",
	} {
		if found[kind] != about {
			t.Errorf("%s warnings are about %q, want %q (all: %v)", kind, found[kind], about, r.Warnings)
		}
	}
	if found[stewardv1.ReceiptWarningKind_RECEIPT_WARNING_KIND_QUESTION_UNANSWERED] == "" {
		t.Errorf("no warning of the open question: %v", r.Warnings)
	}
	md := state.ReceiptMarkdown(r)
	if w, c := strings.Index(md, "## Warnings"), strings.Index(md, "## Context and inputs"); w < 0 || c < w ||
		!strings.Contains(md, "| fallback | `d2` | undeclared model swap: decision d2 used gpt-b, decision d1 before it gpt-a, and no declared fallback covers the change |") {
		t.Errorf("the warnings section:\n%s", md)
	}
}

// TestPlanStepsWarnAndBreakDown: with a plan, a skipped step, a step that
// failed while the plan went on, and a step not yet run are warnings; the
// breakdown has a row per plan step, charged to the plan's milestones, and
// the stage that failed most is the failed step's milestone.
func TestPlanStepsWarnAndBreakDown(t *testing.T) {
	k := contract(1)
	k.Budget = &stewardv1.Budget{MaxCostMicros: 1000, Milestones: []*stewardv1.MilestoneBudget{{MilestoneId: "m1"}, {MilestoneId: "m2"}}}
	inM := func(s *stewardv1.Step, m string) *stewardv1.Step { s.MilestoneId = m; return s }
	skip, cont := searchStep("s"), inM(searchStep("c"), "m2")
	skip.When = "false"
	cont.OnFailure = stewardv1.OnFailure_ON_FAILURE_CONTINUE
	p := &stewardv1.Plan{Version: 1, Ending: stewardv1.PlanEnding_PLAN_ENDING_PRODUCE, Steps: []*stewardv1.Step{inM(searchStep("a"), "m1"), skip, cont, searchStep("e", "a")}}
	h := []event.Payload{&stewardv1.TaskCreated{Contract: k}, &stewardv1.TaskStarted{},
		&stewardv1.PlanSubmitted{Plan: p, PlanHash: "hash-1"},
		&stewardv1.PlanEvaluated{Version: 1, PlanHash: "hash-1", Snapshot: &stewardv1.PolicySnapshot{SnapshotId: "s-plan", BundleRevision: "rev-P", Decision: stewardv1.PolicyDecision_POLICY_DECISION_ALLOW}},
	}
	a := act("act-a", "search", "a", "rev-P")
	a[0].(*stewardv1.ActionProposed).Action.PlanStepId, a[0].(*stewardv1.ActionProposed).Action.MilestoneId = "a", "m1"
	h = append(append(append(h, a[0]), &stewardv1.PlanStepStarted{Version: 1, StepId: "a", ActionId: "act-a", Attempt: 1}), a[1:]...)
	ok := succeededOutcome("act-a", 1)
	ok.Outcome.CostMicros = 30
	h = append(h, ok,
		&stewardv1.PlanStepEnded{Version: 1, StepId: "a", Status: stewardv1.StepStatus_STEP_STATUS_SUCCEEDED},
		&stewardv1.PlanStepEnded{Version: 1, StepId: "s", Status: stewardv1.StepStatus_STEP_STATUS_SKIPPED, Reason: "its when was false"},
		&stewardv1.PlanStepEnded{Version: 1, StepId: "c", Status: stewardv1.StepStatus_STEP_STATUS_FAILED, Reason: "no such page"},
	)
	r, found := warned(t, h...)
	for kind, about := range map[stewardv1.ReceiptWarningKind]string{
		stewardv1.ReceiptWarningKind_RECEIPT_WARNING_KIND_STEP_SKIPPED:      "s",
		stewardv1.ReceiptWarningKind_RECEIPT_WARNING_KIND_FALLBACK:          "c",
		stewardv1.ReceiptWarningKind_RECEIPT_WARNING_KIND_PLAN_NOT_FINISHED: "e",
	} {
		if found[kind] != about {
			t.Errorf("%s warnings are about %q, want %q (all: %v)", kind, found[kind], about, r.Warnings)
		}
	}
	b := r.Breakdown
	var steps []string
	for _, s := range b.Steps {
		steps = append(steps, s.Id+"@"+s.MilestoneId)
	}
	if strings.Join(steps, " ") != "a@m1 s@ c@m2" || b.Steps[0].CostMicros != 30 || b.Steps[0].Kind != stewardv1.ReceiptCostRowKind_RECEIPT_COST_ROW_KIND_PLAN_STEP {
		t.Errorf("step rows: %v", b.Steps)
	}
	if b.Milestones[0].CostMicros != 30 || b.MostFailedMilestone.GetId() != "m2" || b.MostFailedStep.GetId() != "c" {
		t.Errorf("milestone rows %v, failed most %v and %v", b.Milestones, b.MostFailedMilestone, b.MostFailedStep)
	}
}
