package task

import (
	"fmt"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// When an action may get a permit and run, the snapshot a permit carries,
// and the staleness a resume gives the permits it finds (docs/permits.md).

// MayRun reports whether a of t may be claimed and dispatched now: in an
// active task, any action; in a compensating one, only compensations — a
// task being undone starts nothing new of its own.
func MayRun(t *stewardv1.Task, a *stewardv1.Action) bool {
	return Active(t.Status) || t.Status == stewardv1.TaskStatus_TASK_STATUS_COMPENSATING && a.GetCompensates() != ""
}

// MayPermit reports whether a of t may receive a permit now. A paused task
// may hold one (revalidated on resume); an ended task may not, nor may an
// action of a compensating task that is not itself a compensation.
func MayPermit(t *stewardv1.Task, a *stewardv1.Action) bool {
	if t.Status == stewardv1.TaskStatus_TASK_STATUS_COMPENSATING {
		return a.GetCompensates() != ""
	}
	return !Terminal(t.Status)
}

// checkCarriedSnapshot checks the snapshot a permit of a carries (policy's
// evaluation recorded with the permit): it is the one the permit names, it
// allows the action with nothing to wait for, and it is a new round's — a
// snapshot already recorded for a is not recorded again.
func checkCarriedSnapshot(a *stewardv1.Action, pm *stewardv1.ActionPermit, snap *stewardv1.PolicySnapshot) error {
	switch {
	case snap.SnapshotId == "":
		return fmt.Errorf("permit %s carries a snapshot with no id", pm.GetPermitId())
	case pm.GetSnapshotId() != snap.SnapshotId:
		return fmt.Errorf("permit %s names snapshot %q but carries snapshot %s", pm.GetPermitId(), pm.GetSnapshotId(), snap.SnapshotId)
	case snap.Decision != stewardv1.PolicyDecision_POLICY_DECISION_ALLOW:
		return fmt.Errorf("permit %s carries a snapshot that says %s, not allow", pm.GetPermitId(), enumWords(snap.Decision.String(), "POLICY_DECISION_"))
	case a.Snapshot.GetSnapshotId() == snap.SnapshotId:
		return fmt.Errorf("permit %s carries snapshot %s, recorded for the action before", pm.GetPermitId(), snap.SnapshotId)
	}
	return nil
}

// markStale marks the permits a resume makes stale: those of actions not
// yet dispatched under them, or waiting to be dispatched again. A new
// permit clears the mark.
func markStale(t *stewardv1.Task) {
	for i, a := range t.Actions {
		switch a.Status {
		case permitted, claimed, waiting:
			next := shallowAction(a) // replaced, not changed: views may share it
			next.PermitStale = true
			t.Actions[i] = next
		}
	}
}

// permit records governance's one-time permit, with the snapshot it
// may carry.
func permit(t *stewardv1.Task, ev *stewardv1.Event) *actionChange {
	pm, snap := ev.GetActionPermitted().GetPermit(), ev.GetActionPermitted().GetSnapshot()
	tr := &actionChange{id: pm.GetActionId(), from: []stewardv1.ActionStatus{evaluated, approved, revalidating}, to: permitted}
	if snap != nil {
		// Policy's evaluation and the permit at once: what
		// PolicyEvaluated then ActionPermitted would do, in one step.
		tr.from = []stewardv1.ActionStatus{proposed, approved, revalidating}
	}
	tr.check = func(a *stewardv1.Action) error {
		// The permit is checked against the action as the snapshot
		// leaves it.
		status, snapshot := a.Status, a.Snapshot
		if snap != nil {
			if err := checkCarriedSnapshot(a, pm, snap); err != nil {
				return err
			}
			snapshot = snap
			if status == proposed {
				status = evaluated
			}
		}
		switch {
		case pm.ActionHash != a.ActionHash || pm.RequestHash != a.RequestHash:
			return fmt.Errorf("permit %s does not match the action's hashes", pm.PermitId)
		case status == evaluated && snapshot.GetDecision() != stewardv1.PolicyDecision_POLICY_DECISION_ALLOW:
			return fmt.Errorf("permit %s without an allow or an approval", pm.PermitId)
		case status == revalidating && !approvalStands(snapshot, a.Approval):
			return fmt.Errorf("permit %s on revalidation without an allow or an approval of the roles now required", pm.PermitId)
		case a.Permit != nil && pm.PermitId == a.Permit.PermitId:
			return fmt.Errorf("permit %s was issued before; a new permit has a new id", pm.PermitId)
		case !MayPermit(t, a):
			// A paused task may hold a permit; the resume makes it
			// stale, so it is revalidated before it is claimed.
			return fmt.Errorf("task is %s", StatusName(t.Status))
		}
		return nil
	}
	tr.apply = func(a *stewardv1.Action) {
		if snap != nil {
			// Recorded with its permit, whose signature covers its id.
			a.Snapshot, a.SnapshotSigned = snap, nil
		}
		// The event's own, shared, as its snapshot is: the fold changes
		// neither in place.
		a.Permit, a.PermitStale = pm, false
		// Kept for the execution plane, which verifies it before it
		// claims the permit; nil for an unsigned permit.
		a.SignedPermit = ev.GetActionPermitted().GetSigned()
	}
	return tr
}
