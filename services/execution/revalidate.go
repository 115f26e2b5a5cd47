package execution

import (
	"context"
	"fmt"
	"time"

	"github.com/steward-run/steward/pkg/errs"
	"github.com/steward-run/steward/pkg/event"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/task"
)

// A permit is used for one dispatch, and only while it is fresh. Before a
// later use — a retry, the one re-dispatch after "not accepted", a
// dispatch after a resume, a permit past its expiry — execution records
// ActionRevalidating instead of dispatching, and governance decides again
// under the policy, credential and budget in force now: a new permit (the
// ActionPermitted reaction claims it and makes the next attempt, with the
// same op_key), a new approval, or a denial. The fold refuses a second
// dispatch under one permit, and a dispatch under a stale one.

// revalidation says why a's permit may not be used now, with a detail for
// the ledger; REVALIDATION_REASON_UNSPECIFIED when it may.
func (p *Plane) revalidation(a *stewardv1.Action) (stewardv1.RevalidationReason, string) {
	pm := a.Permit
	used := pm.GetPermitId() != "" && a.DispatchedPermitId == pm.GetPermitId()
	switch {
	case used && a.Redispatched && a.SettledBy != "" && a.Outcome.GetAttempt() == a.Attempt:
		return stewardv1.RevalidationReason_REVALIDATION_REASON_NOT_ACCEPTED,
			fmt.Sprintf("the re-dispatch after attempt %d was settled not accepted by %s", a.Attempt, a.SettledBy)
	case used:
		return stewardv1.RevalidationReason_REVALIDATION_REASON_RETRY,
			fmt.Sprintf("attempt %d would go out under the permit attempt %d used", a.Attempt+1, a.Attempt)
	case pm.GetExpiresAt() != nil && !p.now().Before(pm.ExpiresAt.AsTime()):
		// Before staleness: a permit held through a pause past its
		// expiry would be revalidated for either; its expiry says more.
		return stewardv1.RevalidationReason_REVALIDATION_REASON_EXPIRED,
			fmt.Sprintf("the permit expired at %s", pm.ExpiresAt.AsTime().UTC().Format(time.RFC3339Nano))
	case a.PermitStale:
		return stewardv1.RevalidationReason_REVALIDATION_REASON_RESUME, "the task was resumed after the permit was issued"
	}
	return stewardv1.RevalidationReason_REVALIDATION_REASON_UNSPECIFIED, ""
}

// revalidate records that a's permit is not used, if it may not be: ok is
// true when the caller goes on with the permit. The event's id is the
// action's and the old permit's, so workers and redeliveries that find the
// same permit unusable record it once; one that finds it already moved on
// stands down.
func (p *Plane) revalidate(ctx context.Context, taskID string, a *stewardv1.Action, c cause) (ok bool, err error) {
	reason, detail := p.revalidation(a)
	if reason == stewardv1.RevalidationReason_REVALIDATION_REASON_UNSPECIFIED {
		return true, nil
	}
	old := a.Permit.GetPermitId()
	if wait := p.arrivedExpired(a, reason); wait > 0 {
		p.logger.Error("permit arrived already expired, just after an expired permit was revalidated: governance's clock and this worker's disagree by more than --permit-ttl; not revalidated again until then (fix the clocks, or pause and resume the task)",
			"task", taskID, "action", a.ActionId, "permit", old, "issued_at", a.Permit.GetIssuedAt().AsTime(), "expires_at", a.Permit.GetExpiresAt().AsTime(), "now", p.now())
		return false, errs.Later(wait, "permit %s arrived expired", old)
	}
	p.logger.Info("permit not used: revalidating", "task", taskID, "action", a.ActionId, "permit", old, "reason", reason, "detail", detail)
	err = p.record(ctx, taskID, event.ID(a.ActionId, event.TypeActionRevalidating, old), c,
		&stewardv1.ActionRevalidating{ActionId: a.ActionId, PermitId: old, Reason: reason, Detail: detail})
	if errs.Is(err, errs.FailedPrecondition) {
		return false, nil // another worker got there first, or the task stopped
	}
	return false, err
}

// arrivedExpired says how long to hold off revalidating a's permit for its
// expiry, when the permit was issued in answer to an expiry and is expired
// already: clocks that disagree by more than the permit's TTL would make
// every new permit expire on arrival, and revalidation loop without end.
// It holds off for one TTL from the last revalidation, by this clock.
func (p *Plane) arrivedExpired(a *stewardv1.Action, reason stewardv1.RevalidationReason) time.Duration {
	pm := a.Permit
	if reason != stewardv1.RevalidationReason_REVALIDATION_REASON_EXPIRED || a.LastRevalidation != reason || a.RevalidatedAt == nil || pm.GetExpiresAt() == nil {
		return 0
	}
	ttl := pm.ExpiresAt.AsTime().Sub(pm.GetIssuedAt().AsTime())
	return a.RevalidatedAt.AsTime().Add(ttl).Sub(p.now())
}

// reconcileStopped reacts to a denial or a rejection that left an action
// unknown (calls made may have done the work; see the fold's
// mayHaveWorked) by settling it as any unknown outcome is.
func (p *Plane) reconcileStopped(ctx context.Context, rec *stewardv1.EventRecord) error {
	id := rec.Event.GetActionDenied().GetActionId()
	if d := rec.Event.GetApprovalDecided(); d != nil {
		id = d.ActionId
	}
	t, _, err := p.tasks.Load(ctx, rec.Event.TaskId)
	if err != nil {
		return err
	}
	a := task.FindAction(t, id)
	if a.GetStatus() != stewardv1.ActionStatus_ACTION_STATUS_UNKNOWN {
		return nil
	}
	return p.reconcile(ctx, rec.Event.TaskId, id, a.Attempt, 0, causeOf(rec))
}

// firstUse is what a retry's max_elapsed and a tool's key retention are
// measured from: the first dispatch, which a new permit does not move;
// before the first dispatch, the permit's issue.
func firstUse(a *stewardv1.Action) time.Time {
	if a.FirstDispatchedAt != nil {
		return a.FirstDispatchedAt.AsTime()
	}
	return a.Permit.GetIssuedAt().AsTime()
}
