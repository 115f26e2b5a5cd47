package task

import (
	"fmt"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// Who holds an action and calls its tool: the claim on its permit, each
// dispatch, and the heartbeats of the call under way (docs/claims.md).

// claim records the worker that holds a permit.
func claim(t *stewardv1.Task, ev *stewardv1.Event) *actionChange {
	c := ev.GetActionClaimed()
	tr := &actionChange{id: c.ActionId, from: []stewardv1.ActionStatus{permitted}, to: claimed}
	tr.check = func(a *stewardv1.Action) error {
		switch {
		case a.Permit.GetPermitId() != c.PermitId:
			return fmt.Errorf("claim of permit %s, the action's permit is %s", c.PermitId, a.Permit.GetPermitId())
		case !MayRun(t, a):
			return fmt.Errorf("task is %s", StatusName(t.Status))
		}
		return nil
	}
	tr.apply = func(a *stewardv1.Action) { a.ClaimedBy = c.Worker }
	return tr
}

// dispatch records one attempt of the call, and the claim the first
// one may carry.
func dispatch(t *stewardv1.Task, ev *stewardv1.Event) *actionChange {
	d := ev.GetActionDispatched()
	// The first dispatch of a permit may carry its claim: from
	// permitted, it is the claim and the dispatch in one append, and
	// of racing workers the first one's wins as a claim's does.
	tr := &actionChange{id: d.ActionId, from: []stewardv1.ActionStatus{permitted, claimed, waiting}, to: dispatched}
	tr.check = func(a *stewardv1.Action) error {
		switch {
		case !MayRun(t, a):
			return fmt.Errorf("task is %s; this action is not dispatched for it", StatusName(t.Status))
		case d.Attempt != a.Attempt+1:
			return fmt.Errorf("dispatch attempt %d after %d", d.Attempt, a.Attempt)
		case a.Status == permitted && d.Attempt != 1:
			return fmt.Errorf("dispatch attempt %d straight from the permit; only the first attempt carries its claim, a later one is claimed first", d.Attempt)
		case a.Status == permitted && d.PermitId == "":
			return fmt.Errorf("a dispatch straight from the permit names the permit it claims")
		case a.Status == permitted && d.Worker == "":
			return fmt.Errorf("a dispatch straight from the permit names the worker that holds it")
		}
		if unboundDispatch(d) {
			return nil
		}
		switch {
		case d.PermitId != a.Permit.GetPermitId():
			return fmt.Errorf("dispatch under permit %s, the action's permit is %s", d.PermitId, a.Permit.GetPermitId())
		case d.PermitId == a.DispatchedPermitId:
			return fmt.Errorf("permit %s was dispatched under before; a permit is used for one dispatch", d.PermitId)
		case a.PermitStale:
			return fmt.Errorf("permit %s is stale: the task was resumed since it was issued", d.PermitId)
		}
		return nil
	}
	tr.apply = func(a *stewardv1.Action) {
		a.Attempt = d.Attempt
		a.DispatchedPermitId = dispatchedPermit(a, d)
		if a.FirstDispatchedAt == nil {
			a.FirstDispatchedAt = ev.Time
		}
		if d.Worker != "" {
			a.ClaimedBy = d.Worker
		}
		clearWait(a)
	}
	return tr
}

// heartbeat records that the worker holding a call is alive.
func heartbeat(t *stewardv1.Task, ev *stewardv1.Event) *actionChange {
	tr := &actionChange{id: ev.GetActionHeartbeat().ActionId, from: []stewardv1.ActionStatus{dispatched}}
	tr.apply = func(a *stewardv1.Action) { a.LastHeartbeat = ev.Time }
	return tr
}
