package task

import (
	"fmt"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// A permit used again (a retry, a resume, past its expiry) goes back to
// governance first (docs/permits.md).

// revalidation sends a permit back to governance before a later use.
func revalidation(t *stewardv1.Task, ev *stewardv1.Event) *actionChange {
	r := ev.GetActionRevalidating()
	tr := &actionChange{id: r.ActionId, from: []stewardv1.ActionStatus{permitted, claimed, waiting}, to: revalidating}
	tr.check = func(a *stewardv1.Action) error {
		switch {
		case r.PermitId == "" || r.PermitId != a.Permit.GetPermitId():
			return fmt.Errorf("revalidation of permit %q, the action's permit is %s", r.PermitId, a.Permit.GetPermitId())
		case r.Reason == stewardv1.RevalidationReason_REVALIDATION_REASON_UNSPECIFIED:
			return fmt.Errorf("a revalidation names its reason")
		}
		return nil
	}
	// Attempt, op_key, Redispatched and who claimed it stay: the next
	// dispatch, under a new permit, is the next attempt of the same
	// call.
	tr.apply = func(a *stewardv1.Action) {
		clearWait(a)
		a.LastRevalidation, a.RevalidatedAt = r.Reason, ev.Time
	}
	return tr
}
