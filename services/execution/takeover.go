package execution

import (
	"context"
	"fmt"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/task"
	"github.com/steward-run/steward/services/execution/adapter"
)

// takeOver reacts to a task marked stalled by carrying on what its
// execution worker left: a worker that died holding a claim never says so,
// and the stall mark — no event, not even a heartbeat, for the task's
// stall threshold — is the sign. A live worker heartbeats every
// HeartbeatInterval while it calls, so its work is not taken from it.
//
// A permit nobody claimed is claimed, and a claim not yet dispatched, or a
// wait whose timer came due with nothing happening, is dispatched here
// (the fold lets one dispatch per attempt in, whoever makes it). A dispatch without an outcome is
// recorded as unknown, never repeated, and reconciliation takes it from
// there.
func (p *Plane) takeOver(ctx context.Context, rec *stewardv1.EventRecord) error {
	t, _, err := task.Load(ctx, p.log, rec.Event.TaskId)
	if err != nil {
		return err
	}
	if t.StalledSince == nil || !task.Working(t.Status) {
		return nil // it moved on since
	}
	c := causeOf(rec.Event)
	for _, a := range t.Actions {
		switch a.Status {
		case stewardv1.ActionStatus_ACTION_STATUS_PERMITTED:
			err = p.run(ctx, t.Contract.TaskId, a.Permit, c)
		case stewardv1.ActionStatus_ACTION_STATUS_CLAIMED:
			err = p.attempt(ctx, t.Contract.TaskId, a.ActionId, c)
		case stewardv1.ActionStatus_ACTION_STATUS_WAITING:
			// A wait whose timer came due and did nothing.
			if !a.WaitUntil.AsTime().After(p.now()) {
				err = p.attempt(ctx, t.Contract.TaskId, a.ActionId, c)
			}
		case stewardv1.ActionStatus_ACTION_STATUS_DISPATCHED:
			if p.alive(a) {
				continue // its worker still heartbeats: a long call, not a dead one
			}
			release, ok := p.busy.take(a.ActionId)
			if !ok {
				continue // this process is calling it right now
			}
			err = p.outcome(ctx, t.Contract.TaskId, a.ActionId, a.Attempt, c, adapter.Result{
				Status: stewardv1.ActionStatus_ACTION_STATUS_UNKNOWN,
				Reason: fmt.Sprintf("worker %s dispatched the call and went silent: the task stalled with no outcome and no heartbeat", a.ClaimedBy),
			})
			release()
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// alive reports whether a dispatched action's worker gave a sign of life
// lately: a heartbeat, or the dispatch itself, within three heartbeat
// intervals. Some other action's events may have kept the task from
// stalling, so the task's mark alone does not say this call went silent.
func (p *Plane) alive(a *stewardv1.Action) bool {
	last := a.GetUpdatedAt().AsTime()
	if hb := a.GetLastHeartbeat(); hb != nil && hb.AsTime().After(last) {
		last = hb.AsTime()
	}
	return p.now().Sub(last) < 3*p.cfg.HeartbeatInterval
}
