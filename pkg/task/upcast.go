package task

import stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"

// This file is the one place where the fold reads the logs of earlier
// builds (docs/compatibility.md): a task lives across upgrades, so every
// later build folds what an earlier one wrote, and the state machine
// carries no branch of its own for an older shape. The fold has no data
// to rewrite on read — every older event it takes folds as it is — only
// the rule below, for a shape that cannot be made today's.

// unboundDispatch reports whether d is an older ledger's dispatch, which
// names no permit: before 7247771 (2026-11-30) one permit served every
// attempt of its action. Such a dispatch is taken without the checks that
// bind a dispatch to a permit used once: filling in the action's permit
// would refuse a retry's dispatch as a second use of it.
func unboundDispatch(d *stewardv1.ActionDispatched) bool { return d.PermitId == "" }

// dispatchedPermit is the permit d was made under: the one it names, or,
// for an older ledger's (unboundDispatch), the action's one permit.
func dispatchedPermit(a *stewardv1.Action, d *stewardv1.ActionDispatched) string {
	if unboundDispatch(d) {
		return a.Permit.GetPermitId()
	}
	return d.PermitId
}
