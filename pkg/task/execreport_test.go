package task_test

import (
	"errors"
	"testing"

	"github.com/steward-run/steward/pkg/errs"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/task"
)

// TestReportReferencesMustResolve: an execution report may name the
// task's plan steps (in force or retired), its own actions, its
// artifacts by name or name@version, and its decisions; anything else —
// a carried action included — is refused naming the field.
func TestReportReferencesMustResolve(t *testing.T) {
	tk := &stewardv1.Task{
		Contract: &stewardv1.TaskContract{TaskId: "t1"},
		Plan: &stewardv1.PlanState{
			Steps:   []*stewardv1.PlanStepState{{StepId: "fetch"}},
			Retired: []*stewardv1.PlanStepState{{StepId: "old"}},
		},
		Actions:   []*stewardv1.Action{{ActionId: "act-1"}, {ActionId: "act-parent", Carried: true}},
		Artifacts: []*stewardv1.Artifact{{Name: "summary", Version: 1}},
		Decisions: []*stewardv1.Decision{{DecisionId: "d1"}},
	}
	step := func(edit func(*stewardv1.ReportStep)) *stewardv1.ExecutionReport {
		s := &stewardv1.ReportStep{Description: "did it", PlanStepId: "fetch", ActionIds: []string{"act-1"}, Artifacts: []string{"summary", "summary@1"}, DecisionIds: []string{"d1"}}
		if edit != nil {
			edit(s)
		}
		return &stewardv1.ExecutionReport{Steps: []*stewardv1.ReportStep{s}, Deviations: []*stewardv1.ReportDeviation{{PlanStepId: "old", What: "w", Why: "y"}}}
	}
	if err := task.CheckReport(tk, step(nil)); err != nil {
		t.Fatalf("a report naming only what the task has: %v", err)
	}
	if err := task.CheckReport(tk, nil); err != nil {
		t.Fatalf("no report: %v", err)
	}
	tests := []struct {
		name  string
		r     *stewardv1.ExecutionReport
		field string
	}{
		{"a plan step the plan lacks", step(func(s *stewardv1.ReportStep) { s.PlanStepId = "nope" }), "report.steps[0].plan_step_id"},
		{"a carried action", step(func(s *stewardv1.ReportStep) { s.ActionIds = []string{"act-1", "act-parent"} }), "report.steps[0].action_ids[1]"},
		{"an artifact version not submitted", step(func(s *stewardv1.ReportStep) { s.Artifacts = []string{"summary@2"} }), "report.steps[0].artifacts[0]"},
		{"an artifact name not submitted", step(func(s *stewardv1.ReportStep) { s.Artifacts = []string{"summary", "draft"} }), "report.steps[0].artifacts[1]"},
		{"a decision not recorded", step(func(s *stewardv1.ReportStep) { s.DecisionIds = []string{"d2"} }), "report.steps[0].decision_ids[0]"},
		{"a deviation from a step the plan lacks", &stewardv1.ExecutionReport{Deviations: []*stewardv1.ReportDeviation{{PlanStepId: "nope"}}}, "report.deviations[0].plan_step_id"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var e *errs.Error
			if err := task.CheckReport(tk, tt.r); !errors.As(err, &e) || e.Code != errs.Invalid || e.Field != tt.field {
				t.Fatalf("err = %v, want invalid naming %s", err, tt.field)
			}
		})
	}
}
