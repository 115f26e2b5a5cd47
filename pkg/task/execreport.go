package task

import (
	"fmt"
	"strings"

	"github.com/steward-run/steward/pkg/errs"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// CheckReport refuses an execution report that names anything t does not
// have: an action, an artifact ("name" or "name@version"), a decision or
// a plan step. The report is the agent's word; its references are what
// lets a reader check that word against the record, so each must resolve.
// The error names the field as the client spells it, under report.
func CheckReport(t *stewardv1.Task, r *stewardv1.ExecutionReport) error {
	for i, st := range r.GetSteps() {
		f := fmt.Sprintf("report.steps[%d]", i)
		if err := checkPlanStepRef(t, f+".plan_step_id", st.PlanStepId); err != nil {
			return err
		}
		for j, id := range st.ActionIds {
			if a := FindAction(t, id); a == nil || a.Carried {
				return errs.Field(fmt.Sprintf("%s.action_ids[%d]", f, j), "task %s has no action %s", t.Contract.GetTaskId(), errs.Quote(id))
			}
		}
		for j, ref := range st.Artifacts {
			if !hasArtifact(t, ref) {
				return errs.Field(fmt.Sprintf("%s.artifacts[%d]", f, j), "task %s has no artifact %s", t.Contract.GetTaskId(), errs.Quote(ref))
			}
		}
		for j, id := range st.DecisionIds {
			if FindDecision(t, id) == nil {
				return errs.Field(fmt.Sprintf("%s.decision_ids[%d]", f, j), "task %s has no decision %s", t.Contract.GetTaskId(), errs.Quote(id))
			}
		}
	}
	for i, d := range r.GetDeviations() {
		if err := checkPlanStepRef(t, fmt.Sprintf("report.deviations[%d].plan_step_id", i), d.PlanStepId); err != nil {
			return err
		}
	}
	return nil
}

// checkPlanStepRef refuses a plan step id, when set, that is no step of
// t's plan, in force or retired.
func checkPlanStepRef(t *stewardv1.Task, field, id string) error {
	if id == "" {
		return nil
	}
	if t.Plan == nil {
		return errs.Field(field, "task %s has no plan", t.Contract.GetTaskId())
	}
	for _, steps := range [][]*stewardv1.PlanStepState{t.Plan.Steps, t.Plan.Retired} {
		for _, st := range steps {
			if st.StepId == id {
				return nil
			}
		}
	}
	return errs.Field(field, "task %s's plan has no step %s", t.Contract.GetTaskId(), errs.Quote(id))
}

// hasArtifact reports whether ref names an artifact of t: "name@version",
// or a bare name with some version.
func hasArtifact(t *stewardv1.Task, ref string) bool {
	if strings.Contains(ref, "@") {
		return FindArtifact(t, ref) != nil
	}
	return len(ArtifactVersions(t, ref)) > 0
}
