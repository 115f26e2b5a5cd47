package execution

import (
	"context"
	"fmt"

	"github.com/steward-run/steward/pkg/crashpoint"
	"github.com/steward-run/steward/pkg/errs"
	"github.com/steward-run/steward/pkg/event"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/task"
	"github.com/steward-run/steward/services/execution/adapter"
	"github.com/steward-run/steward/services/execution/breaker"
)

// then is what an attempt does next, when dispatch made no call.
type then int

const (
	done       then = iota // the call is made, or there is nothing to call
	claimFirst             // a permit stands before something to record: claim it, then attempt
	holdIt                 // the log refused the dispatch: hold the action as the log has it
)

// inFlight is a dispatch on the log whose call is to be made.
type inFlight struct {
	taskID  string
	a       *stewardv1.Action
	attempt uint32
	call    *prepared
	key     string // the breaker's
	c       cause
	// cut, when set, says why the call is not made: it may have been,
	// before a restore (see sentAfterCut); the outcome is unknown.
	cut string
}

// obstacle is what stands between an action and its call, recorded
// instead of a dispatch: a refusal, or a wait for the breaker or the
// tool's limits.
type obstacle func(ctx context.Context) error

// dispatch checks an action and records its next dispatch; the dispatch
// is nil when there is no call to make, and then says what comes next.
//
// A permitted action's first dispatch is its claim too: when every check
// passes, the one ActionDispatched append, conditional on the task's last
// sequence, names this worker as the holder, and of workers racing the
// first append wins, as a claim's does (the fold takes it only from the
// action's current permit, for attempt 1). When a check finds an obstacle,
// a claimed or waiting action records it, and a permitted one records
// nothing: its permit is claimed first (claimFirst), and the claim's
// attempt records it. Either way the call is made after the append, never
// before.
func (p *Plane) dispatch(ctx context.Context, taskID, actionID string, c cause) (*inFlight, then, error) {
	t, err := p.load(ctx, taskID, c)
	if err != nil {
		return nil, done, err
	}
	a := task.FindAction(t, actionID)
	claims := a.GetStatus() == stewardv1.ActionStatus_ACTION_STATUS_PERMITTED
	switch {
	case a == nil:
		return nil, done, nil
	case claims && (a.Attempt != 0 || !task.MayRun(t, a)):
		// A later attempt's permit is claimed first; a task that stopped
		// since run read it leaves the permit to the claim's checks.
		return nil, claimFirst, nil
	case claims:
	case a.Status != stewardv1.ActionStatus_ACTION_STATUS_CLAIMED && a.Status != stewardv1.ActionStatus_ACTION_STATUS_WAITING:
		return nil, done, nil
	case !task.MayRun(t, a) && task.Terminal(t.Status) && a.Status == stewardv1.ActionStatus_ACTION_STATUS_WAITING:
		// An ended task makes no more attempts: close the action, so that
		// the attempts already made are charged and its end is recorded.
		return nil, done, p.refuse(ctx, taskID, a, c, adapter.Result{
			Status: stewardv1.ActionStatus_ACTION_STATUS_FAILED, FailureClass: stewardv1.FailureClass_FAILURE_CLASS_TRANSIENT,
			Reason: fmt.Sprintf("not retried: the task is %s (after %d attempts)", task.StatusName(t.Status), a.Attempt),
		})
	case !task.MayRun(t, a):
		return nil, done, nil // the resume picks it up, or the task moved on without it
	}
	// revalidation: a permit used before, stale or expired is not used
	// again; governance decides anew, credential and budget included.
	if ok, err := p.revalidate(ctx, taskID, a, c); !ok || err != nil {
		return nil, done, err
	}
	// After a restore: a call that may have gone out is recorded as
	// dispatched, under the same claim, but not made (restorecut.go).
	if why, err := p.cuts.sentAfterCut(ctx, t, a); err != nil {
		return nil, done, err
	} else if why != "" {
		d, next, err := p.recordDispatch(ctx, t, a, nil, c, claims)
		if d != nil {
			d.cut = why
		}
		return d, next, err
	}
	call, instead, err := p.clear(ctx, t, a, c)
	switch {
	case err != nil:
		return nil, done, err
	case instead != nil && claims:
		return nil, claimFirst, nil
	case instead != nil:
		return nil, done, instead(ctx)
	}
	return p.recordDispatch(ctx, t, a, call, c, claims)
}

// clear runs the checks that stand between a and its next call: the
// call, prepared and let through by the tool's limits and its breaker, or
// the obstacle to record instead.
func (p *Plane) clear(ctx context.Context, t *stewardv1.Task, a *stewardv1.Action, c cause) (*prepared, obstacle, error) {
	taskID, next := t.Contract.GetTaskId(), a.Attempt+1
	// The tool's limits, first and with one read: a call held back costs
	// no preparation (see limits.go).
	if wait, full, err := p.limits.peekSlot(ctx, t.Tenant, a, next); err != nil {
		return nil, nil, err
	} else if wait > 0 {
		return nil, func(ctx context.Context) error { return p.limits.holdBack(ctx, taskID, a, c, wait, full) }, nil
	}
	if why, err := p.credentialStands(ctx, t, a); err != nil {
		return nil, nil, err
	} else if why != "" {
		return nil, p.refusal(taskID, a, c, adapter.Result{
			Status: stewardv1.ActionStatus_ACTION_STATUS_FAILED, FailureClass: stewardv1.FailureClass_FAILURE_CLASS_DETERMINISTIC,
			Reason: "refused before dispatch: " + why,
		}), nil
	}
	call, refusal, err := p.prepare(ctx, taskID, t.Tenant, a)
	if err != nil {
		return nil, nil, err
	} else if refusal != nil {
		return nil, p.refusal(taskID, a, c, *refusal), nil
	}
	if next > 1 && !a.Redispatched {
		// The retention is checked when the retry goes out, not when the
		// failure came back: a wait or a pause may have outlasted it.
		if why := pastRetention(call.Tool, firstUse(a), p.now()); why != "" {
			return nil, p.refusal(taskID, a, c, adapter.Result{
				Status: stewardv1.ActionStatus_ACTION_STATUS_UNKNOWN, FailureClass: stewardv1.FailureClass_FAILURE_CLASS_UNKNOWN,
				Reason: fmt.Sprintf("not retried: %s, and an earlier try may have done the work; its outcome is settled by the status query or SettleAction", why),
			}), nil
		}
	}
	key := call.breaker
	ok, retryAt, tr := p.limits.allowBreaker(key, call.Tool)
	p.limits.noteBreaker(ctx, tr)
	if !ok {
		return nil, func(ctx context.Context) error {
			return p.wait(ctx, taskID, a, a.Status, c, stewardv1.WaitKind_WAIT_KIND_BREAKER, retryAt,
				fmt.Sprintf("the circuit breaker for service %s is open", serviceOf(key)))
		}, nil
	}
	// The slot itself: taken only now, the call prepared; held back after
	// all (another worker took the slot since the peek), the breaker's
	// probe goes back and the action waits.
	if wait, err := p.limits.takeSlot(ctx, call, a.ActionId, next); err != nil || wait > 0 {
		p.limits.noteBreaker(ctx, p.breakers.Record(key, breaker.Neutral, p.now()))
		if err != nil {
			return nil, nil, err
		}
		return nil, func(ctx context.Context) error { return p.limits.holdBack(ctx, taskID, a, c, wait, true) }, nil
	}
	return call, nil, nil
}

// refusal is the obstacle of a refused call: res recorded as a's outcome.
func (p *Plane) refusal(taskID string, a *stewardv1.Action, c cause, res adapter.Result) obstacle {
	return func(ctx context.Context) error { return p.refuse(ctx, taskID, a, c, res) }
}

// recordDispatch puts a's next dispatch on the log, and with it the call
// to make. One that carries the claim goes on the log only while the
// action is still permitted under its permit, as a claim does: one that
// another worker claimed meanwhile is its to dispatch, under its lease,
// even though the fold would take a dispatch of a claimed action from
// anyone (that is how a dead worker's claim is taken over). t is the task
// dispatch loaded, which the write builds on first (see recordWhere); a,
// its action as loaded, stays as it was (the fold replaces an action's
// entry, never changes it).
func (p *Plane) recordDispatch(ctx context.Context, t *stewardv1.Task, a *stewardv1.Action, call *prepared, c cause, claims bool) (*inFlight, then, error) {
	taskID := t.Contract.GetTaskId()
	if claims && p.beforeClaim != nil {
		p.beforeClaim()
	}
	next, key := a.Attempt+1, ""
	if call != nil { // nil for a dispatch whose call is not made (sentAfterCut)
		key = call.breaker
	}
	d := &stewardv1.ActionDispatched{ActionId: a.ActionId, Attempt: next, Worker: p.cfg.Worker, PermitId: a.Permit.GetPermitId()}
	// The id names the worker: a dispatch on the log is this worker's only
	// if it is its own (a retried append), never another's.
	id := event.ID(a.ActionId, event.TypeActionDispatched, fmt.Sprint(next), p.cfg.Worker)
	lost, err := "", error(nil)
	if claims {
		var after *stewardv1.Task
		after, err = p.recordWhere(ctx, t, taskID, id, c, d, func(t *stewardv1.Task) bool { return claimable(t, d) })
		if err == nil {
			lost = claimLost(after, d)
		}
	} else {
		err = p.record(ctx, taskID, id, c, d)
	}
	if errs.Is(err, errs.FailedPrecondition) {
		lost, err = "the task stopped or the action moved on: "+err.Error(), nil
	}
	if (lost != "" || err != nil) && call != nil {
		// No call goes out: give back what the breaker let through, or a
		// half-open breaker would hold its probe for a call never made;
		// and the tool's slot.
		p.limits.noteBreaker(ctx, p.breakers.Record(key, breaker.Neutral, p.now()))
		p.limits.releaseSlot(ctx, call, a.ActionId, next)
	}
	switch {
	case err != nil:
		return nil, done, err
	case lost != "":
		if claims {
			p.logger.Info("permit not claimed: "+lost, "task", taskID, "action", a.ActionId, "permit", d.PermitId)
		}
		return nil, holdIt, nil
	}
	if claims {
		// The claim is on the log, in the dispatch; the call is not made.
		crashpoint.Here(crashpoint.AfterClaim)
	}
	return &inFlight{taskID: taskID, a: a, attempt: next, call: call, key: key, c: c}, done, nil
}

// claimable says whether d, a dispatch that carries its claim, may go on
// t's log: the action is still permitted under d's permit.
func claimable(t *stewardv1.Task, d *stewardv1.ActionDispatched) bool {
	cur := task.FindAction(t, d.ActionId)
	return cur.GetPermit().GetPermitId() == d.PermitId && cur.GetStatus() == stewardv1.ActionStatus_ACTION_STATUS_PERMITTED
}

// claimLost says why d, a dispatch that carries its claim, is not this
// worker's on t, the task as the write left it; "" when it is: appended
// now, or a retried append that was stored, its call not yet answered.
func claimLost(t *stewardv1.Task, d *stewardv1.ActionDispatched) string {
	cur := task.FindAction(t, d.ActionId)
	if cur.GetStatus() == stewardv1.ActionStatus_ACTION_STATUS_DISPATCHED && cur.GetDispatchedPermitId() == d.PermitId &&
		cur.GetAttempt() == d.Attempt && cur.GetClaimedBy() == d.Worker {
		return ""
	}
	lost := "the action is " + task.ActionStatusName(cur.GetStatus())
	if cur.GetClaimedBy() != "" {
		lost += " by worker " + cur.ClaimedBy
	}
	return lost
}
