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

// claim takes a permit for this worker when something stands between the
// permit and its first call (see dispatch; otherwise the dispatch itself
// carries the claim). The claim is the ActionClaimed append itself: it is
// conditional on the task's last sequence, and the fold takes a claim only
// of a permitted action, so of any number of workers racing, exactly one
// appends it; the others read it and stand down. Nothing else is written, so nothing can be left half-claimed by a
// worker that dies: what it appended is the claim, and its lease (see
// hold) ends it.
//
// won is false when another worker's claim is on the log, or when the task
// stopped since run read it: the loop guard stopping it for input, a pause
// or a cancel racing the claim is an ordinary race, not a fault. The
// permit then waits for the resume, which takes it up again (carryOn); an
// ended task's permit is moot.
func (p *Plane) claim(ctx context.Context, taskID string, permit *stewardv1.ActionPermit, c cause) (won bool, err error) {
	if p.beforeClaim != nil {
		p.beforeClaim()
	}
	actionID := permit.ActionId
	ev, err := event.New(event.Meta{
		// The permit and the worker are in the id: a claim that is on the
		// log is this worker's only if it is this worker's claim of this
		// permit (a retried append), never another's.
		ID:            event.ID(actionID, event.TypeActionClaimed, permit.PermitId, p.cfg.Worker),
		TaskID:        taskID,
		Actor:         &stewardv1.Actor{Principal: p.cfg.Worker, Plane: PlaneName},
		CausationID:   c.id,
		CorrelationID: c.correlation,
		Time:          p.now(),
	}, &stewardv1.ActionClaimed{ActionId: actionID, PermitId: permit.PermitId, Worker: p.cfg.Worker})
	if err != nil {
		return false, err
	}
	var lost string
	err = p.tasks.Write(ctx, taskID, func(t *stewardv1.Task) (*stewardv1.Event, error) {
		lost = ""
		switch a := task.FindAction(t, actionID); {
		case a.GetPermit().GetPermitId() != permit.PermitId || a.Status != stewardv1.ActionStatus_ACTION_STATUS_PERMITTED:
			if a.GetClaimedBy() == p.cfg.Worker && a.GetPermit().GetPermitId() == permit.PermitId {
				return nil, nil // ours, appended already (Update returns before appending)
			}
			lost = fmt.Sprintf("the action is %s", task.ActionStatusName(a.GetStatus()))
			if a.GetClaimedBy() != "" {
				lost += " by worker " + a.ClaimedBy
			}
			return nil, nil
		case !task.MayRun(t, a):
			lost = "the task is " + task.StatusName(t.Status)
			return nil, nil
		}
		return ev, nil
	})
	switch {
	case err != nil:
		return false, fmt.Errorf("record %s: %w", ev.Type, err)
	case lost != "":
		p.logger.Info("permit not claimed: "+lost, "task", taskID, "action", actionID, "permit", permit.PermitId)
		return false, nil
	}
	return true, nil
}

// hold carries on with an action that is claimed or dispatched, which is
// what a worker that died leaves behind. Its own (this worker's name: a
// restart under the same name) it takes up at once; another worker's
// only once that worker's lease has run out — no claim, dispatch or
// heartbeat from it for Config.Lease — and until then it asks for the
// event again when the lease would end. A live worker heartbeats every
// Lease/3 while it calls, so its work is never taken from it.
//
// Taking up a claim dispatches it; the fold lets one dispatch per attempt
// in, so of several workers taking over at once, one calls. Taking up a
// dispatch records its outcome as unknown, for reconciliation: the call
// is never made again blind.
func (p *Plane) hold(ctx context.Context, taskID string, a *stewardv1.Action, c cause) error {
	reason := lostCallReason
	if a.ClaimedBy != p.cfg.Worker {
		if left := p.leaseLeft(a); left > 0 {
			return errs.Later(left, "action %s is held by worker %s for %s more", a.ActionId, a.ClaimedBy, left.Round(time.Millisecond))
		}
		reason = fmt.Sprintf("worker %s dispatched the call and went silent for longer than its lease (%s): no outcome and no heartbeat", a.ClaimedBy, p.cfg.Lease)
		p.logger.Info("taking over an action whose worker went silent", "task", taskID, "action", a.ActionId, "worker", a.ClaimedBy, "status", task.ActionStatusName(a.Status))
	}
	switch a.Status {
	case stewardv1.ActionStatus_ACTION_STATUS_CLAIMED:
		return p.attempt(ctx, taskID, a.ActionId, nil, c)
	case stewardv1.ActionStatus_ACTION_STATUS_DISPATCHED:
		return p.lostCall(ctx, taskID, a, c, reason)
	}
	return nil
}

// leaseLeft is how long a's holder still has before any worker may take a
// over: the lease from its last sign of life on the log (the claim, the
// dispatch or a heartbeat). The times are the holder's clock read against
// this worker's, so the lease must be well above the clocks' skew.
func (p *Plane) leaseLeft(a *stewardv1.Action) time.Duration {
	last := a.GetUpdatedAt().AsTime()
	if hb := a.GetLastHeartbeat(); hb != nil && hb.AsTime().After(last) {
		last = hb.AsTime()
	}
	return last.Add(p.cfg.Lease).Sub(p.now())
}
