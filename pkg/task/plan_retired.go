package task

import (
	"fmt"
	"slices"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// What a revision leaves behind (docs/plans.md, "Revisions"). The plan
// driver proposes a step's action, then records the step as running it
// (PlanStepStarted); a revision that lands between the two — a
// concurrent SubmitPlan, or one after a crash and before the
// redelivery — meets an action that names the step and that no step
// state owns. If the revision keeps the step, the driver adopts the
// action (its proposal id is the same); if it changes or withdraws the
// step, the action is retired with it, so that the driver withdraws it
// and governance permits it no longer (PlanWithdrew).

// leftBehind returns, as withdrawn states of their steps, the actions of
// t's plan cur that revision s leaves to no step: proposed for a step s
// changes or withdraws and not yet recorded as its; and retries,
// proposed by the recovery policy, of an action a retired step owns or
// of one whose step s withdraws. A retry of the action of a step that
// stays is the driver's to follow.
func leftBehind(cur *stewardv1.PlanState, s *stewardv1.PlanSubmitted, actions []*stewardv1.Action) []*stewardv1.PlanStepState {
	if cur == nil {
		return nil
	}
	owner := map[string]string{} // action id → "" for a retired state's, else its step
	for _, st := range cur.Retired {
		for _, id := range st.ActionIds {
			owner[id] = ""
		}
	}
	for _, st := range cur.Steps {
		for _, id := range st.ActionIds {
			owner[id] = st.StepId
		}
	}
	byID := make(map[string]*stewardv1.Action, len(actions))
	for _, a := range actions {
		byID[a.ActionId] = a
	}
	kept := func(step string) bool {
		return slices.Contains(s.Revision.GetKept(), step) || slices.Contains(s.Revision.GetChanged(), step)
	}
	var retired []*stewardv1.PlanStepState
	for _, a := range actions {
		if a.PlanStepId == "" || a.Compensates != "" {
			continue
		}
		if _, owned := owner[a.ActionId]; owned {
			continue
		}
		step, found := "", false
		for x := byID[a.RetryOf]; x != nil && !found; x = byID[x.RetryOf] {
			step, found = owner[x.ActionId]
		}
		switch {
		case found && step != "" && kept(step):
			continue // the retry of a running step's action: the driver follows it
		case !found && slices.Contains(s.Revision.GetKept(), a.PlanStepId):
			continue // proposed, not yet recorded: the driver adopts it
		}
		retired = withRetired(retired, cur, a, s.Plan.GetVersion())
	}
	return retired
}

// withRetired adds action a to the withdrawn state of its step among
// retired, made for it if none is yet: one attempt past the step's own
// state in cur, since a was proposed for the attempt to come, so that the
// step, if a revision adds it back, proposes anew (retiredAttempts).
func withRetired(retired []*stewardv1.PlanStepState, cur *stewardv1.PlanState, a *stewardv1.Action, v uint32) []*stewardv1.PlanStepState {
	for _, st := range retired {
		if st.StepId == a.PlanStepId {
			st.ActionIds = append(st.ActionIds, a.ActionId)
			return retired
		}
	}
	var attempts uint32
	for _, st := range cur.Steps {
		if st.StepId == a.PlanStepId {
			attempts = st.Attempts
		}
	}
	return append(retired, &stewardv1.PlanStepState{
		StepId: a.PlanStepId, Status: stepWithdrawn, Version: cur.Version, Attempts: max(attempts+1, retiredAttempts(cur.Retired, a.PlanStepId)+1),
		ActionIds: []string{a.ActionId},
		Reason:    fmt.Sprintf("withdrawn by plan version %d: no step of it runs these actions", v),
	})
}

// retiredAttempts is the last attempt of step id among the retired
// states: a step a revision adds back starts after it, so its proposals
// are new ones, never the actions withdrawn with it.
func retiredAttempts(retired []*stewardv1.PlanStepState, id string) uint32 {
	var n uint32
	for _, st := range retired {
		if st.StepId == id {
			n = max(n, st.Attempts)
		}
	}
	return n
}

// PlanWithdrew says why t's plan no longer asks for action a, or "" when
// it does or a is no plan step's: a is, or retries, an action of a step a
// revision withdrew; or the plan in force, whose step a is for, was
// denied by policy or rejected by an approver. Governance permits no
// such action (one permitted before runs on that permit, on the record),
// and the recovery policy does not retry one.
func PlanWithdrew(t *stewardv1.Task, a *stewardv1.Action) string {
	if t.Plan == nil || a.GetPlanStepId() == "" {
		return ""
	}
	for x := a; x != nil; x = FindAction(t, x.RetryOf) {
		for _, st := range t.Plan.Retired {
			if st.Status == stepWithdrawn && slices.Contains(st.ActionIds, x.ActionId) {
				return fmt.Sprintf("its plan step %s was withdrawn by a revision of the plan (%s)", st.StepId, st.Reason)
			}
		}
	}
	if PlanStopped(t.Plan) {
		return fmt.Sprintf("its plan's version %d in force is %s: none of it runs", t.Plan.Version, PlanGovernanceName(t.Plan.Governance))
	}
	return ""
}
