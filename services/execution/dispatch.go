package execution

import (
	"context"
	"errors"
	"fmt"

	"github.com/steward-run/steward/pkg/crashpoint"
	"github.com/steward-run/steward/pkg/errs"
	"github.com/steward-run/steward/pkg/event"
	"github.com/steward-run/steward/pkg/eventlog"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/task"
	"github.com/steward-run/steward/services/execution/adapter"
	"github.com/steward-run/steward/services/execution/breaker"
)

// cause is what prompted a step: the event (or timer) it follows from.
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
				err = p.attempt(ctx, t.Contract.TaskId, a.ActionId, c)
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
		// its word — except an unsigned one that is stale or expired: a
		// permit from before permits were signed is decided again that
		// way (pause and resume the task), and all a forger gets by it is
		// governance's own decision, from records it verifies
		// (votesHold), signed.
		if err := p.permitRefusal(a); err != nil {
			if reason, _ := p.revalidation(a); a.SignedPermit != nil || reason == stewardv1.RevalidationReason_REVALIDATION_REASON_UNSPECIFIED {
				p.logger.Error("permit refused, not claimed: "+err.Error(), "task", taskID, "action", a.ActionId, "permit", a.Permit.GetPermitId())
				return nil
			}
			p.logger.Warn("permit refused, not claimed; governance decides again: "+err.Error(), "task", taskID, "action", a.ActionId, "permit", a.Permit.GetPermitId())
		}
		// revalidation: a stale or expired permit is never claimed.
		if ok, err := p.revalidate(ctx, taskID, a, c); !ok || err != nil {
			return err
		}
		// The first dispatch of a permit carries its claim when every
		// check before the call passes at once (see dispatch): one append
		// then claims and dispatches. When something stands between —
		// a refusal to record, an open breaker — the permit is claimed
		// first, and the attempt after the claim deals with it.
		if err := p.attempt(ctx, taskID, a.ActionId, c); !errors.Is(err, errClaimFirst) {
			return err
		}
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
		return p.attempt(ctx, taskID, a.ActionId, c)
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
func (p *Plane) attempt(ctx context.Context, taskID, actionID string, c cause) error {
	err := p.attemptOnce(ctx, taskID, actionID, c)
	if !errors.Is(err, errDispatchLost) {
		return err
	}
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

// errDispatchLost is attemptOnce's answer when the log refused its
// dispatch record: another worker made this attempt, or the task stopped.
var errDispatchLost = errors.New("the dispatch record was refused")

// errClaimFirst is dispatch's answer for a permitted action that may not be
// dispatched at once: something stands between the permit and the call
// (a refusal to record, an open breaker or a tool at its limits, a later
// attempt), and the permit is claimed first, as it always was, before
// that is dealt with.
var errClaimFirst = errors.New("the permit is claimed before it is dispatched")

// attemptOnce is one try at attempt, holding the action in this process
// until its call has an outcome. The call and its outcome go on apart from
// the reaction that made the dispatch (eventlog.Detach), so that a long
// call does not hold up the task's other events: a resume, another permit.
func (p *Plane) attemptOnce(ctx context.Context, taskID, actionID string, c cause) error {
	release, ok := p.busy.take(actionID)
	if !ok {
		return errBusy(actionID)
	}
	d, err := p.dispatch(ctx, taskID, actionID, c)
	if err != nil || d == nil {
		release()
		return err
	}
	if finish, ok := eventlog.Detach(ctx); ok {
		p.calls.Go(func() {
			defer release()
			finish(p.complete(ctx, d))
		})
		return nil
	}
	defer release()
	return p.complete(ctx, d)
}

// inFlight is a dispatch on the log whose call is to be made.
type inFlight struct {
	taskID  string
	a       *stewardv1.Action
	attempt uint32
	call    *prepared
	key     string // the breaker's
	c       cause
}

// dispatch checks a claimed or waiting action and records its next
// dispatch; nil when there is nothing to call (refused, waiting, or not
// this worker's to make now).
//
// A permitted action's first dispatch is its claim too: when every check
// below passes, the one ActionDispatched append, conditional on the task's
// last sequence, names this worker as the holder, and of workers racing
// the first append wins, as a claim's does (the fold takes it only from
// the action's current permit, for attempt 1). When a check would record
// something instead — a refusal, a wait for the breaker or the tool's
// limits — dispatch
// records nothing and answers errClaimFirst: the permit is claimed, and
// the claim's attempt records it, as before. Either way the call is made
// after the append, never before.
func (p *Plane) dispatch(ctx context.Context, taskID, actionID string, c cause) (*inFlight, error) {
	t, err := p.load(ctx, taskID, c)
	if err != nil {
		return nil, err
	}
	a := task.FindAction(t, actionID)
	direct := a.GetStatus() == stewardv1.ActionStatus_ACTION_STATUS_PERMITTED
	// between answers a check that would record something before the
	// call: for a permit not yet claimed, claim it first.
	between := func(record func() error) (*inFlight, error) {
		if direct {
			return nil, errClaimFirst
		}
		return nil, record()
	}
	switch {
	case a == nil:
		return nil, nil
	case direct && (a.Attempt != 0 || !task.MayRun(t, a)):
		// A later attempt's permit is claimed first; a task that stopped
		// since run read it leaves the permit to the claim's checks.
		return nil, errClaimFirst
	case direct:
	case a.Status != stewardv1.ActionStatus_ACTION_STATUS_CLAIMED && a.Status != stewardv1.ActionStatus_ACTION_STATUS_WAITING:
		return nil, nil
	case !task.MayRun(t, a) && task.Terminal(t.Status) && a.Status == stewardv1.ActionStatus_ACTION_STATUS_WAITING:
		// An ended task makes no more attempts: close the action, so that
		// the attempts already made are charged and its end is recorded.
		return nil, p.refuse(ctx, taskID, a, c, adapter.Result{
			Status: stewardv1.ActionStatus_ACTION_STATUS_FAILED, FailureClass: stewardv1.FailureClass_FAILURE_CLASS_TRANSIENT,
			Reason: fmt.Sprintf("not retried: the task is %s (after %d attempts)", task.StatusName(t.Status), a.Attempt),
		})
	case !task.MayRun(t, a):
		return nil, nil // the resume picks it up, or the task moved on without it
	}
	// revalidation: a permit used before, stale or expired is not used
	// again; governance decides anew, credential and budget included.
	if ok, err := p.revalidate(ctx, taskID, a, c); !ok || err != nil {
		return nil, err
	}
	next := a.Attempt + 1
	// The tool's limits, first and with one read: a call held back costs
	// no preparation (see limits.go).
	if wait, full, err := p.limits.peekSlot(ctx, t.Tenant, a, next); err != nil {
		return nil, err
	} else if wait > 0 {
		return between(func() error { return p.limits.holdBack(ctx, taskID, a, c, wait, full) })
	}
	if why, err := p.credentialStands(ctx, t, a); err != nil {
		return nil, err
	} else if why != "" {
		return between(func() error {
			return p.refuse(ctx, taskID, a, c, adapter.Result{
				Status: stewardv1.ActionStatus_ACTION_STATUS_FAILED, FailureClass: stewardv1.FailureClass_FAILURE_CLASS_DETERMINISTIC,
				Reason: "refused before dispatch: " + why,
			})
		})
	}
	call, refusal, err := p.prepare(ctx, taskID, t.Tenant, a)
	if err != nil {
		return nil, err
	}
	if refusal != nil {
		return between(func() error { return p.refuse(ctx, taskID, a, c, *refusal) })
	}
	if next > 1 && !a.Redispatched {
		// The retention is checked when the retry goes out, not when the
		// failure came back: a wait or a pause may have outlasted it.
		if why := pastRetention(call.Tool, firstUse(a), p.now()); why != "" {
			return nil, p.refuse(ctx, taskID, a, c, adapter.Result{
				Status: stewardv1.ActionStatus_ACTION_STATUS_UNKNOWN, FailureClass: stewardv1.FailureClass_FAILURE_CLASS_UNKNOWN,
				Reason: fmt.Sprintf("not retried: %s, and an earlier try may have done the work; its outcome is settled by the status query or SettleAction", why),
			})
		}
	}
	key := call.breaker
	ok, retryAt, tr := p.limits.allowBreaker(key, call.Tool)
	p.limits.noteBreaker(ctx, tr)
	if !ok {
		return between(func() error {
			return p.wait(ctx, taskID, a, a.Status, c, stewardv1.WaitKind_WAIT_KIND_BREAKER, retryAt,
				fmt.Sprintf("the circuit breaker for service %s is open", serviceOf(key)))
		})
	}
	// The slot itself: taken only now, the call prepared; held back after
	// all (another worker took the slot since the peek), the breaker's
	// probe goes back and the action waits.
	if wait, err := p.limits.takeSlot(ctx, call, actionID, next); err != nil || wait > 0 {
		p.limits.noteBreaker(ctx, p.breakers.Record(key, breaker.Neutral, p.now()))
		if err != nil {
			return nil, err
		}
		return between(func() error { return p.limits.holdBack(ctx, taskID, a, c, wait, true) })
	}
	if direct && p.beforeClaim != nil {
		p.beforeClaim()
	}
	permitID := a.Permit.GetPermitId()
	// A dispatch that carries the claim goes on the log only while the
	// action is still permitted under this permit, as a claim does: one
	// that another worker claimed meanwhile is its to dispatch, under its
	// lease, even though the fold would take a dispatch of a claimed
	// action from anyone (that is how a dead worker's claim is taken over).
	lost := ""
	still := func(t *stewardv1.Task) bool {
		lost = ""
		if !direct {
			return true
		}
		cur := task.FindAction(t, actionID)
		switch {
		case cur.GetPermit().GetPermitId() == permitID && cur.GetStatus() == stewardv1.ActionStatus_ACTION_STATUS_PERMITTED:
			return true
		case cur.GetStatus() == stewardv1.ActionStatus_ACTION_STATUS_DISPATCHED && cur.GetDispatchedPermitId() == permitID &&
			cur.GetAttempt() == next && cur.GetClaimedBy() == p.cfg.Worker:
			return false // ours: a retried append that was stored, its call not yet answered
		}
		lost = "the action is " + task.ActionStatusName(cur.GetStatus())
		if cur.GetClaimedBy() != "" {
			lost += " by worker " + cur.ClaimedBy
		}
		return false
	}
	// The id names the worker: a dispatch on the log is this worker's only
	// if it is its own (a retried append), never another's.
	err = p.recordIf(ctx, taskID, event.ID(actionID, event.TypeActionDispatched, fmt.Sprint(next), p.cfg.Worker), c,
		&stewardv1.ActionDispatched{ActionId: actionID, Attempt: next, Worker: p.cfg.Worker, PermitId: permitID}, still)
	if errs.Is(err, errs.FailedPrecondition) && direct {
		lost = "the task stopped or the action moved on: " + err.Error()
	}
	if lost != "" || err != nil {
		// No call goes out: give back what the breaker let through, or a
		// half-open breaker would hold its probe for a call never made;
		// and the tool's slot.
		p.limits.noteBreaker(ctx, p.breakers.Record(key, breaker.Neutral, p.now()))
		p.limits.releaseSlot(ctx, call, actionID, next)
	}
	switch {
	case lost != "":
		p.logger.Info("permit not claimed: "+lost, "task", taskID, "action", actionID, "permit", permitID)
		return nil, errDispatchLost
	case errs.Is(err, errs.FailedPrecondition):
		return nil, errDispatchLost
	case err != nil:
		return nil, err
	}
	if direct {
		// The claim is on the log, in the dispatch; the call is not made.
		crashpoint.Here(crashpoint.AfterClaim)
	}
	return &inFlight{taskID: taskID, a: a, attempt: next, call: call, key: key, c: c}, nil
}
