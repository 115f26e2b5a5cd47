package execution

import (
	"context"
	"fmt"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/task"
)

// takeOver reacts to a task marked stalled by carrying on what its
// execution worker left: a worker that died holding a claim never says so,
// and the stall mark — no event, not even a heartbeat, for the task's
// stall threshold — is the sign. A live worker heartbeats every
// HeartbeatInterval while it calls, so its work is not taken from it.
//
// It carries on as a resume does (carryOn), and records a dispatch left
// silent — no outcome, no heartbeat for three intervals, whoever made it —
// as unknown: never repeated; reconciliation takes it from there.
func (p *Plane) takeOver(ctx context.Context, rec *stewardv1.EventRecord) error {
	t, _, err := task.Load(ctx, p.log, rec.Event.TaskId)
	if err != nil {
		return err
	}
	if t.StalledSince == nil || !task.Working(t.Status) {
		return nil // it moved on since
	}
	return p.carryOn(ctx, t, causeOf(rec.Event), func(a *stewardv1.Action) error {
		if p.alive(a) {
			return nil // its worker still heartbeats: a long call, not a dead one
		}
		return p.lostCall(ctx, t.Contract.TaskId, a, causeOf(rec.Event), fmt.Sprintf(
			"worker %s dispatched the call and went silent: the task stalled with no outcome and no heartbeat", a.ClaimedBy))
	})
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
