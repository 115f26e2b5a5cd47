package task

import (
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// The action cap: a loop guard against an agent proposing forever. A
// proposal past it stops the task for input (services/control), and a
// person who lets the task go on grants it as many again.

// DefaultMaxActions caps the actions a task may propose when its contract
// sets no limit: a loop guard against an agent proposing forever.
const DefaultMaxActions = 1000

// MaxActions is the cap on t's proposals in force: the contract's
// max_actions (or DefaultMaxActions), plus what resumes at the cap granted
// (Task.actions_granted).
func MaxActions(t *stewardv1.Task) int {
	return contractMaxActions(t) + int(t.GetActionsGranted())
}

// contractMaxActions is the contract's cap on t's proposals.
func contractMaxActions(t *stewardv1.Task) int {
	if n := t.Contract.GetLimits().GetMaxActions(); n > 0 {
		return int(n)
	}
	return DefaultMaxActions
}

// AtActionCap reports whether t may propose no more actions of its own
// (compensations do not count) until a resume grants more.
func AtActionCap(t *stewardv1.Task) bool { return proposals(t) >= MaxActions(t) }

// grantActions lets a task that a person lets run again while it is at its
// action cap propose the contract's max_actions more: resuming a task
// stopped at its cap would otherwise only stop it again at its next
// proposal, and no command raises the contract's limit.
func grantActions(t *stewardv1.Task) {
	if AtActionCap(t) || AtDecisionCap(t) {
		t.ActionsGranted += uint32(contractMaxActions(t))
	}
}

// proposals counts the actions that count against the task's cap:
// compensations do not, so a task at its cap can still undo its work, nor
// do the parent's actions a fork carries.
func proposals(t *stewardv1.Task) int {
	n := 0
	for _, a := range t.Actions {
		if a.Compensates == "" && !a.Carried {
			n++
		}
	}
	return n
}
