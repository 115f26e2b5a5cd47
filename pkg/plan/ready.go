package plan

import (
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// Ready returns the ids of the steps that may start now, in plan order: a
// step that is pending (or has no status yet) whose dependencies are all
// done. A dependency is done when it succeeded, when it was skipped (its
// when was false: dependents then decide for themselves, through their
// own when), or when it failed and its on_failure is CONTINUE. A failure
// that stops the plan leaves its dependents waiting for a person or for
// compensation. p is assumed valid (see Validate).
func Ready(p *stewardv1.Plan, statuses map[string]stewardv1.StepStatus) []string {
	byID := make(map[string]*stewardv1.Step, len(p.GetSteps()))
	for _, s := range p.GetSteps() {
		byID[s.GetId()] = s
	}
	var ready []string
	for _, s := range p.GetSteps() {
		if st := statuses[s.GetId()]; st != stewardv1.StepStatus_STEP_STATUS_PENDING && st != stewardv1.StepStatus_STEP_STATUS_UNSPECIFIED {
			continue
		}
		ok := true
		for _, d := range s.GetDependsOn() {
			if !Done(byID[d], statuses[d]) {
				ok = false
				break
			}
		}
		if ok {
			ready = append(ready, s.GetId())
		}
	}
	return ready
}

// Done reports whether step s, in status st, lets its dependents start:
// succeeded, skipped, or failed with on_failure continue. A plan whose
// steps are all done has ended.
func Done(s *stewardv1.Step, st stewardv1.StepStatus) bool {
	switch st {
	case stewardv1.StepStatus_STEP_STATUS_SUCCEEDED, stewardv1.StepStatus_STEP_STATUS_SKIPPED:
		return true
	case stewardv1.StepStatus_STEP_STATUS_FAILED:
		return s.GetOnFailure() == stewardv1.OnFailure_ON_FAILURE_CONTINUE
	}
	return false
}
