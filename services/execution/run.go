package execution

import (
	"context"

	"github.com/steward-run/steward/pkg/crashpoint"
	"github.com/steward-run/steward/pkg/eventlog"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/task"
)

// cause is the event a step of the plane's answers: its id and
// correlation, and where it is on the log (0 when not known, as for a
// timer), which is how far the task must have been read to answer it.
type cause struct {
	id, correlation string
	seq             uint64
}

func causeOf(rec *stewardv1.EventRecord) cause {
	return cause{id: rec.Event.EventId, correlation: rec.Event.CorrelationId, seq: rec.Sequence}
}

// load reads the task to answer c: a fold this process keeps that already
// holds c's event is enough, since what the answer writes is checked again
// on the task as the log has it (taskstore.Write and the fold).
func (p *Plane) load(ctx context.Context, taskID string, c cause) (*stewardv1.Task, error) {
	if c.seq == 0 {
		t, _, err := p.tasks.Load(ctx, taskID)
		return t, err
	}
	t, _, err := p.tasks.LoadSince(ctx, taskID, c.seq)
	return t, err
}

// execute reacts to a permit: claim it and make the first attempt — in one
// append when nothing stands between the two (see run). Only the worker
// whose claim wins goes past it.
func (p *Plane) execute(ctx context.Context, rec *stewardv1.EventRecord, pm *stewardv1.ActionPermitted) error {
	return p.run(ctx, rec.Event.TaskId, pm.GetPermit(), causeOf(rec))
}

// resume carries on with a task that was paused, or stopped for input:
// permits it received meanwhile, claims that could not be dispatched, and
// waits that ended. What succeeded is never touched again.
func (p *Plane) resume(ctx context.Context, rec *stewardv1.EventRecord) error {
	t, _, err := p.tasks.Load(ctx, rec.Event.TaskId)
	if err != nil {
		return err
	}
	return p.carryOn(ctx, t, causeOf(rec))
}

// carryOn takes up what t's actions were left at: a permit not claimed, a
// claim not dispatched or a dispatch without an outcome (see hold), a wait
// whose time has come.
//
// Every action is taken up: one that must wait (a call in flight, a lease
// still running) does not hold up the rest, and its error comes back after.
func (p *Plane) carryOn(ctx context.Context, t *stewardv1.Task, c cause) error {
	var first error
	for _, a := range t.Actions {
		var err error
		switch a.Status {
		case stewardv1.ActionStatus_ACTION_STATUS_PERMITTED:
			err = p.run(ctx, t.Contract.TaskId, a.Permit, c)
		case stewardv1.ActionStatus_ACTION_STATUS_CLAIMED, stewardv1.ActionStatus_ACTION_STATUS_DISPATCHED:
			err = p.hold(ctx, t.Contract.TaskId, a, c)
		case stewardv1.ActionStatus_ACTION_STATUS_WAITING:
			// A wait whose timer fired while nothing could act on it; one
			// still to come fires by itself.
			if !a.WaitUntil.AsTime().After(p.now()) {
				err = p.attempt(ctx, t.Contract.TaskId, a.ActionId, nil, c)
			}
		}
		if first == nil {
			first = err
		}
	}
	return first
}

// run carries one permit as far as the ledger lets it go. A fresh permit
// is claimed by its first dispatch when every check before the call passes
// at once, and otherwise by ActionClaimed before the attempt (see
// dispatch). A permit claimed or dispatched already is held (see hold): a
// dispatch recorded without an outcome is never repeated; its outcome is
// unknown.
func (p *Plane) run(ctx context.Context, taskID string, permit *stewardv1.ActionPermit, c cause) error {
	t, err := p.load(ctx, taskID, c)
	if err != nil {
		return err
	}
	a := task.FindAction(t, permit.ActionId)
	if a == nil || a.Permit.GetPermitId() != permit.PermitId {
		return nil
	}
	switch a.Status {
	case stewardv1.ActionStatus_ACTION_STATUS_PERMITTED:
		if !task.MayRun(t, a) {
			// Paused: the permit waits for the resume. Ended: it is moot.
			p.logger.Info("permit not claimed: the task is not running", "task", taskID, "action", a.ActionId, "status", task.StatusName(t.Status))
			return nil
		}
		// A permit whose signature does not hold is never claimed, and is
		// checked before revalidation, so that none is decided again on
		// its word — except once it would not be used anyway (refusedUntil).
		if err := p.permitRefusal(a); err != nil {
			if reason, _ := p.revalidation(a); reason == stewardv1.RevalidationReason_REVALIDATION_REASON_UNSPECIFIED {
				p.logger.Error("permit refused, not claimed: "+err.Error(), "task", taskID, "action", a.ActionId, "permit", a.Permit.GetPermitId())
				return refusedUntil(a, p.now())
			}
			p.logger.Warn("permit refused, not claimed; governance decides again: "+err.Error(), "task", taskID, "action", a.ActionId, "permit", a.Permit.GetPermitId())
		}
		// revalidation: a stale or expired permit is never claimed.
		if ok, err := p.revalidate(ctx, taskID, a, c); !ok || err != nil {
			return err
		}
		return p.attempt(ctx, taskID, a.ActionId, permit, c)
	case stewardv1.ActionStatus_ACTION_STATUS_CLAIMED, stewardv1.ActionStatus_ACTION_STATUS_DISPATCHED:
		return p.hold(ctx, taskID, a, c)
	}
	return nil // done before, or waiting on a timer
}

// attempt makes the next dispatch of a claimed or waiting action — or the
// first of a permitted one, which then carries the claim (see dispatch):
// breaker, dispatch record, call, outcome. The fold lets exactly one
// dispatch per attempt onto the log, so of several workers (or a timer and
// a redelivery) that try, one calls the tool; the others hold the action
// under its lease (see hold), so that if that one dies, they take over.
//
// permit is the one run carries, nil for any other caller: when something
// stands between a permitted action and its call, run's permit is claimed
// first and the attempt made after the claim deals with it; without it in
// hand, the permit's own reaction (run) claims it.
func (p *Plane) attempt(ctx context.Context, taskID, actionID string, permit *stewardv1.ActionPermit, c cause) error {
	next, err := p.attemptOnce(ctx, taskID, actionID, c)
	switch {
	case err != nil:
		return err
	case next == claimFirst && permit != nil:
		return p.claimThenAttempt(ctx, taskID, permit, c)
	case next == holdIt:
		return p.holdAsItIs(ctx, taskID, actionID, c)
	}
	return nil
}

// claimThenAttempt claims permit on its own (ActionClaimed) and makes the
// attempt under the claim.
func (p *Plane) claimThenAttempt(ctx context.Context, taskID string, permit *stewardv1.ActionPermit, c cause) error {
	won, err := p.claim(ctx, taskID, permit, c)
	if err != nil {
		return err
	}
	if !won {
		// Read again: another worker's claim is held under its lease
		// like any other, and a stopped task leaves the permit be.
		return p.run(ctx, taskID, permit, c)
	}
	crashpoint.Here(crashpoint.AfterClaim)
	return p.attempt(ctx, taskID, permit.ActionId, nil, c)
}

// holdAsItIs holds the action as the log has it after a dispatch of this
// worker's was refused: another worker made this attempt, or the task
// stopped.
func (p *Plane) holdAsItIs(ctx context.Context, taskID, actionID string, c cause) error {
	t, _, err := p.tasks.Load(ctx, taskID)
	if err != nil {
		return err
	}
	switch a := task.FindAction(t, actionID); a.GetStatus() {
	case stewardv1.ActionStatus_ACTION_STATUS_CLAIMED, stewardv1.ActionStatus_ACTION_STATUS_DISPATCHED:
		return p.hold(ctx, taskID, a, c)
	}
	return nil
}

// attemptOnce is one try at attempt, holding the action in this process
// until its call has an outcome. The call and its outcome go on apart from
// the reaction that made the dispatch (eventlog.Detach), so that a long
// call does not hold up the task's other events: a resume, another permit.
func (p *Plane) attemptOnce(ctx context.Context, taskID, actionID string, c cause) (then, error) {
	release, ok := p.busy.take(actionID)
	if !ok {
		return done, errBusy(actionID)
	}
	d, next, err := p.dispatch(ctx, taskID, actionID, c)
	if err != nil || d == nil {
		release()
		return next, err
	}
	if finish, ok := eventlog.Detach(ctx); ok {
		p.calls.Go(func() {
			defer release()
			finish(p.complete(ctx, d))
		})
		return done, nil
	}
	defer release()
	return done, p.complete(ctx, d)
}
