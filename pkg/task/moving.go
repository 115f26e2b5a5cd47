package task

import stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"

// Moving reports whether Steward is still moving a of t on by itself, with
// nobody but Steward to act: governance decides what is proposed (in any
// task: it denies for an ended one), execution runs what its task lets
// run, a call out ends in an outcome whatever became of its task, and a
// wait ends with its timer, or with its task. A paused task holds what it
// may not run; a person's turn (awaiting approval, an outcome to settle)
// and an end are not moving. It is the one rule of a wait for an action
// (GetAction and ProposeAction with wait): the call holds while it holds.
func Moving(t *stewardv1.Task, a *stewardv1.Action) bool {
	switch a.Status {
	case stewardv1.ActionStatus_ACTION_STATUS_PROPOSED,
		stewardv1.ActionStatus_ACTION_STATUS_EVALUATED,
		stewardv1.ActionStatus_ACTION_STATUS_APPROVED,
		stewardv1.ActionStatus_ACTION_STATUS_REVALIDATING,
		stewardv1.ActionStatus_ACTION_STATUS_DISPATCHED:
		return true
	case stewardv1.ActionStatus_ACTION_STATUS_PERMITTED,
		stewardv1.ActionStatus_ACTION_STATUS_CLAIMED:
		return MayRun(t, a)
	case stewardv1.ActionStatus_ACTION_STATUS_WAITING:
		return Working(t.Status) || Terminal(t.Status)
	}
	return false
}
