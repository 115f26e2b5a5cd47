package task_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/steward-run/steward/pkg/errs"
	"github.com/steward-run/steward/pkg/event"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/stewardtest"
	"github.com/steward-run/steward/pkg/task"
)

const (
	msPending = stewardv1.MilestoneStatus_MILESTONE_STATUS_PENDING
	msActive  = stewardv1.MilestoneStatus_MILESTONE_STATUS_ACTIVE
	msDone    = stewardv1.MilestoneStatus_MILESTONE_STATUS_DONE
	msFailed  = stewardv1.MilestoneStatus_MILESTONE_STATUS_FAILED
	msAtCap   = stewardv1.MilestoneStatus_MILESTONE_STATUS_AT_CAP
)

// phased is a task whose contract declares collect (a cap of 2), analyse
// and report, in that order, with a budget line for analyse; its allowed
// plan's steps a and b are collect's, c analyse's; report has no steps.
func phased() []event.Payload {
	c := &stewardv1.TaskCreated{RequestId: "r1", Contract: &stewardv1.TaskContract{Intent: "i",
		Milestones: []*stewardv1.Milestone{
			{MilestoneId: "collect", Title: "Collect", MaxActions: 2},
			{MilestoneId: "analyse", Title: "Analyse"},
			{MilestoneId: "report", Title: "Report"},
		},
		Budget: &stewardv1.Budget{MaxCostMicros: 100, Currency: "USD", Milestones: []*stewardv1.MilestoneBudget{{MilestoneId: "analyse", MaxCostMicros: 40}}},
	}}
	p := planOf(1, "a", "b", "c")
	p.Steps[0].MilestoneId, p.Steps[1].MilestoneId, p.Steps[2].MilestoneId = "collect", "collect", "analyse"
	return []event.Payload{c, started(), planSubmitted(p, "h1", nil), judged(1, "h1", planAllow)}
}

func tagged(id, milestone string) event.Payload {
	return &stewardv1.ActionProposed{Action: &stewardv1.Action{ActionId: id, ActionHash: "h" + id, RequestHash: "r", Tool: "search", MilestoneId: milestone}}
}

func decided(id, milestone string, provenance stewardv1.Provenance) event.Payload {
	return &stewardv1.DecisionRecorded{Decision: &stewardv1.Decision{DecisionId: id, MilestoneId: milestone,
		Call: &stewardv1.ModelCall{Provenance: provenance}}}
}

func progressed(milestone string, percent uint32) event.Payload {
	return &stewardv1.MilestoneProgressed{MilestoneId: milestone, Percent: percent, Note: "n"}
}

// TestMilestoneStatusIsDerived: a milestone is pending until something
// tagged with it starts, active then, done when all its plan steps ended
// well (or, with none, at the agent's 100 %), failed when one failed, at
// its cap when its actions and decisions reach it; the current milestone
// is the first in the contract's order that is not done.
func TestMilestoneStatusIsDerived(t *testing.T) {
	reported := stewardv1.Provenance_PROVENANCE_REPORTED
	tests := []struct {
		name    string
		then    []event.Payload
		want    []stewardv1.MilestoneStatus // collect, analyse, report
		current string
	}{
		{"nothing started", nil, []stewardv1.MilestoneStatus{msPending, msPending, msPending}, "collect"},
		{"a step started", []event.Payload{stepAction("a1", ""), stepStarted("a", "a1", 1)},
			[]stewardv1.MilestoneStatus{msActive, msPending, msPending}, "collect"},
		{"an action tagged", []event.Payload{tagged("x1", "analyse")}, []stewardv1.MilestoneStatus{msPending, msActive, msPending}, "collect"},
		{"a decision tagged", []event.Payload{decided("d1", "report", reported)}, []stewardv1.MilestoneStatus{msPending, msPending, msActive}, "collect"},
		{"a progress report", []event.Payload{progressed("report", 0)}, []stewardv1.MilestoneStatus{msPending, msPending, msActive}, "collect"},
		{"its steps ended well", []event.Payload{stepAction("a1", ""), stepStarted("a", "a1", 1),
			stepEnded("a", stewardv1.StepStatus_STEP_STATUS_SUCCEEDED), stepEnded("b", stewardv1.StepStatus_STEP_STATUS_SKIPPED)},
			[]stewardv1.MilestoneStatus{msDone, msPending, msPending}, "analyse"},
		{"one step of two ended", []event.Payload{stepAction("a1", ""), stepStarted("a", "a1", 1), stepEnded("a", stewardv1.StepStatus_STEP_STATUS_SUCCEEDED)},
			[]stewardv1.MilestoneStatus{msActive, msPending, msPending}, "collect"},
		{"a step failed", []event.Payload{stepAction("a1", ""), stepStarted("a", "a1", 1), stepEnded("a", stewardv1.StepStatus_STEP_STATUS_FAILED)},
			[]stewardv1.MilestoneStatus{msFailed, msPending, msPending}, "collect"},
		{"at its cap", []event.Payload{tagged("x1", "collect"), decided("d1", "collect", reported)},
			[]stewardv1.MilestoneStatus{msAtCap, msPending, msPending}, "collect"},
		{"done beats the cap", []event.Payload{tagged("x1", "collect"), tagged("x2", "collect"), stepStarted("a", "x1", 1),
			stepEnded("a", stewardv1.StepStatus_STEP_STATUS_SUCCEEDED), stepEnded("b", stewardv1.StepStatus_STEP_STATUS_SKIPPED)},
			[]stewardv1.MilestoneStatus{msDone, msPending, msPending}, "analyse"},
		{"observed decisions do not count", []event.Payload{tagged("x1", "collect"), decided("d1", "collect", stewardv1.Provenance_PROVENANCE_OBSERVED)},
			[]stewardv1.MilestoneStatus{msActive, msPending, msPending}, "collect"},
		{"no steps, 100 reported", []event.Payload{progressed("report", 100)}, []stewardv1.MilestoneStatus{msPending, msPending, msDone}, "collect"},
		{"all done", []event.Payload{stepAction("a1", ""), stepStarted("a", "a1", 1), stepEnded("a", stewardv1.StepStatus_STEP_STATUS_SUCCEEDED),
			stepEnded("b", stewardv1.StepStatus_STEP_STATUS_SKIPPED), stepEnded("c", stewardv1.StepStatus_STEP_STATUS_SKIPPED), progressed("report", 100)},
			[]stewardv1.MilestoneStatus{msDone, msDone, msDone}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tk, err := task.Fold(stewardtest.History(t, "t1", append(phased(), tc.then...)...))
			if err != nil {
				t.Fatal(err)
			}
			var got []stewardv1.MilestoneStatus
			for _, m := range tk.Milestones {
				got = append(got, m.Status)
			}
			if !slices.Equal(got, tc.want) || tk.CurrentMilestone != tc.current {
				t.Fatalf("statuses %v, current %q; want %v, %q", got, tk.CurrentMilestone, tc.want, tc.current)
			}
		})
	}
}

// TestMilestoneStateCarriesCountsSpendAndReports: a milestone's state
// counts what is held to its cap, shows its spend against its budget line
// and the agent's last report.
func TestMilestoneStateCarriesCountsSpendAndReports(t *testing.T) {
	tk, err := task.Fold(stewardtest.History(t, "t1", append(phased(),
		tagged("x1", "analyse"), decided("d1", "analyse", stewardv1.Provenance_PROVENANCE_REPORTED),
		&stewardv1.BudgetConsumed{CostMicros: 30, MilestoneId: "analyse"}, progressed("analyse", 60))...))
	if err != nil {
		t.Fatal(err)
	}
	m := task.MilestoneOf(tk, "analyse")
	if m.ActionsUsed != 2 || m.MaxActions != 0 || m.CostMicros != 30 || m.MaxCostMicros != 40 || m.Percent != 60 || m.Note != "n" || m.ProgressedAt == nil || m.Steps != 1 || m.Title != "Analyse" {
		t.Fatalf("analyse = %v", m)
	}
}

// TestMilestoneCapIsHeldAndGranted: past its cap a tagged proposal or
// decision is refused by the fold; a resume of the task stopped for that
// milestone grants it max_actions more, and a resume from another stop
// grants nothing.
func TestMilestoneCapIsHeldAndGranted(t *testing.T) {
	full := append(phased(), tagged("x1", "collect"), tagged("x2", "collect"))
	stop := &stewardv1.TaskNeedsInput{Reason: "cap", Cause: stewardv1.NeedsInputCause_NEEDS_INPUT_CAUSE_MILESTONE_CAP, MilestoneId: "collect"}
	asked := &stewardv1.TaskNeedsInput{Question: "?", Cause: stewardv1.NeedsInputCause_NEEDS_INPUT_CAUSE_ASKED}
	for _, tc := range []struct {
		name    string
		then    []event.Payload
		granted uint32
		err     string
	}{
		{"a proposal past the cap", []event.Payload{tagged("x3", "collect")}, 0, "cap of 2"},
		{"a decision past the cap", []event.Payload{decided("d1", "collect", stewardv1.Provenance_PROVENANCE_REPORTED)}, 0, "cap of 2"},
		{"another milestone goes on", []event.Payload{tagged("x3", "analyse")}, 0, ""},
		{"resumed at the cap", []event.Payload{stop, resumed(), tagged("x3", "collect"), tagged("x4", "collect")}, 2, ""},
		{"past the grant", []event.Payload{stop, resumed(), tagged("x3", "collect"), tagged("x4", "collect"), tagged("x5", "collect")}, 2, "cap of 4"},
		{"resumed from another stop", []event.Payload{asked, resumed(), tagged("x3", "collect")}, 0, "cap of 2"},
		{"a stop for an unknown milestone", []event.Payload{&stewardv1.TaskNeedsInput{Reason: "cap", Cause: stop.Cause, MilestoneId: "nope"}}, 0, "no milestone"},
		{"a milestone named on another stop", []event.Payload{&stewardv1.TaskNeedsInput{Question: "?", Cause: asked.Cause, MilestoneId: "collect"}, resumed()}, 0, "only for NEEDS_INPUT_CAUSE_MILESTONE_CAP"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tk, err := task.Fold(stewardtest.History(t, "t1", append(slices.Clip(full), tc.then...)...))
			switch {
			case tc.err != "":
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("%v; want an error naming %s", err, tc.err)
				}
			case err != nil:
				t.Fatal(err)
			case task.MilestoneOf(tk, "collect").ActionsGranted != tc.granted:
				t.Fatalf("granted %d; want %d", task.MilestoneOf(tk, "collect").ActionsGranted, tc.granted)
			}
		})
	}
}

// TestMilestoneTagsAndReportsAreChecked: with milestones declared, a tag
// or a report must name one, and a report's percent is at most 100; with
// none declared, budget lines name milestones as before and the task has
// no milestone states.
func TestMilestoneTagsAndReportsAreChecked(t *testing.T) {
	for _, tc := range []struct {
		name  string
		then  event.Payload
		field string
	}{
		{"an action tagged with a budget-less stranger", tagged("x1", "nope"), "milestone_id"},
		{"a decision tagged with a stranger", decided("d1", "nope", stewardv1.Provenance_PROVENANCE_REPORTED), "decision.milestone_id"},
		{"usage charged to a stranger", &stewardv1.BudgetConsumed{Tokens: 1, MilestoneId: "nope"}, "milestone_id"},
		{"a report on a stranger", progressed("nope", 10), "milestone_id"},
		{"a report past 100", progressed("report", 101), "percent"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := task.Fold(stewardtest.History(t, "t1", append(phased(), tc.then)...))
			if refusedField(err) != tc.field {
				t.Fatalf("%v; want a refusal naming %s", err, tc.field)
			}
		})
	}
	lines := &stewardv1.TaskCreated{Contract: &stewardv1.TaskContract{Intent: "i",
		Budget: &stewardv1.Budget{MaxTokens: 10, Milestones: []*stewardv1.MilestoneBudget{{MilestoneId: "m1", MaxTokens: 5}}}}}
	tk, err := task.Fold(stewardtest.History(t, "t1", lines, started(), tagged("x1", "m1")))
	if err != nil || len(tk.Milestones) != 0 || tk.CurrentMilestone != "" {
		t.Fatalf("%v, %v; want a budget line tag taken and no milestone states", err, tk.GetMilestones())
	}
	if _, err := task.Fold(stewardtest.History(t, "t1", lines, started(), progressed("m1", 10))); refusedField(err) != "milestone_id" {
		t.Fatalf("%v; want a report on an undeclared milestone refused", err)
	}
}

// refusedField is the field a refusal names, or "".
func refusedField(err error) string {
	var e *errs.Error
	if errors.As(err, &e) {
		return e.Field
	}
	return ""
}
