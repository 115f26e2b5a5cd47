package execution

import (
	"context"
	"fmt"
	"time"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"

	"github.com/steward-run/steward/pkg/crashpoint"
	"github.com/steward-run/steward/pkg/errs"
	"github.com/steward-run/steward/pkg/event"
	"github.com/steward-run/steward/pkg/secret"
	"github.com/steward-run/steward/pkg/task"
	"github.com/steward-run/steward/services/execution/adapter"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// complete makes d's call and records how it went: its outcome, or the
// wait before a retry; or, for a call not to be made, its unknown outcome.
func (p *Plane) complete(ctx context.Context, d *inFlight) error {
	if d.cut != "" {
		return p.cuts.unknownAfterCut(ctx, d)
	}
	taskID, actionID, a, next, call, key, c := d.taskID, d.a.ActionId, d.a, d.attempt, d.call, d.key, d.c
	holding := p.limits.holdSlot(ctx, call, actionID, next)
	res := eligible(p.call(ctx, taskID, a, next, call), call.Tool, firstUse(a), p.now())
	holding()
	crashpoint.Here(crashpoint.AfterDispatch)
	if next > 1 {
		crashpoint.Here(crashpoint.AfterRetryDispatch)
	}
	p.limits.noteBreaker(ctx, p.breakers.Record(key, breakerOutcome(res), p.now()))
	if res.Status == stewardv1.ActionStatus_ACTION_STATUS_FAILED && res.FailureClass == stewardv1.FailureClass_FAILURE_CLASS_TRANSIENT {
		policy := retryPolicyOf(a, call.Tool)
		if d, ok := policy.next(next+1, firstUse(a), p.now()); ok {
			a = proto.CloneOf(a) // the loaded task's, shared with the fold: never changed in place
			a.Attempt = next
			return p.wait(ctx, taskID, a, stewardv1.ActionStatus_ACTION_STATUS_DISPATCHED, c, stewardv1.WaitKind_WAIT_KIND_RETRY, p.now().Add(d),
				fmt.Sprintf("attempt %d of %d failed: %s", next, policy.MaxAttempts, res.Reason))
		}
	}
	if res.CostMicros == 0 {
		// Every call made for the action so far, at the contract's price.
		res.CostMicros = call.Tool.GetCostMicrosPerCall() * int64(next)
	}
	return p.outcome(ctx, taskID, actionID, next, c, res)
}

// call makes the call, keeping the task and the log told that it is still
// going while it lasts, then checks a successful result against the tool's
// result schema.
func (p *Plane) call(ctx context.Context, taskID string, a *stewardv1.Action, attempt uint32, req *prepared) adapter.Result {
	stop := p.heartbeat(ctx, taskID, a.ActionId, attempt)
	cctx, span := callSpan(ctx, p.log.Tracer(), taskID, a, attempt)
	res := req.adapter.Call(cctx, req.Request)
	endCall(span, res)
	stop()
	p.modelFailures.note(res)
	if res.Status == stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED && req.result != nil {
		// The call was made: its result is judged even if this worker
		// is stopping, never recorded as failed for want of a turn.
		if err := req.result.Validate(context.WithoutCancel(ctx), res.Body); err != nil {
			return adapter.Result{
				Status: stewardv1.ActionStatus_ACTION_STATUS_FAILED, FailureClass: stewardv1.FailureClass_FAILURE_CLASS_VALIDATION,
				Reason: secret.Redact("the tool answered, but its result does not fit the contract's result_schema: "+err.Error(), req.secrets),
			}
		}
	}
	// Judged as the tool sent it, kept without the secrets it was sent.
	res.Reason = secret.Redact(res.Reason, req.secrets)
	res.Body = redactJSON(res.Body, req.secrets)
	return res
}

// wait records that a's next attempt waits until until; the reaction to
// that event sets the durable timer that ends the wait.
//
// Only while a is still as this worker left it (from, at its attempt): a
// worker whose lease ran out during its call finds the action taken over,
// and its retry is not its to schedule any more.
func (p *Plane) wait(ctx context.Context, taskID string, a *stewardv1.Action, from stewardv1.ActionStatus, c cause, kind stewardv1.WaitKind, until time.Time, reason string) error {
	next := a.Attempt + 1
	still := func(t *stewardv1.Task) bool {
		cur := task.FindAction(t, a.ActionId)
		return cur.GetStatus() == from && cur.GetAttempt() == a.Attempt
	}
	after, err := p.recordWhere(ctx, nil, taskID, event.ID(a.ActionId, event.TypeActionWaiting, fmt.Sprint(next), kind.String(), until.UTC().Format(time.RFC3339Nano)), c,
		&stewardv1.ActionWaiting{ActionId: a.ActionId, Kind: kind, Until: timestamppb.New(until), NextAttempt: next, Reason: reason}, still)
	if err != nil {
		return err
	}
	if cur := task.FindAction(after, a.ActionId); !waitsAsRecorded(cur, a.Attempt, kind, until) {
		p.logger.Info("wait not recorded: the action moved on meanwhile (recorded before, or taken over)", "task", taskID, "action", a.ActionId, "kind", kind.String(), "now", task.ActionStatusName(cur.GetStatus()))
	}
	return nil
}

// waitsAsRecorded says whether a, as the write left it, waits as wait
// recorded it: its attempt's wait of that kind, until then.
func waitsAsRecorded(a *stewardv1.Action, attempt uint32, kind stewardv1.WaitKind, until time.Time) bool {
	return a.GetStatus() == stewardv1.ActionStatus_ACTION_STATUS_WAITING && a.GetAttempt() == attempt &&
		a.GetWaitKind() == kind && a.GetWaitUntil().AsTime().Equal(until)
}

func errBusy(actionID string) error {
	return errs.New(errs.Unavailable, "action %s is being worked on in this process; later", actionID)
}
