package execution

import (
	"context"
	"fmt"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/steward-run/steward/pkg/crashpoint"
	"github.com/steward-run/steward/pkg/errs"
	"github.com/steward-run/steward/pkg/event"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/task"
	"github.com/steward-run/steward/services/execution/adapter"
)

// lostCallReason is why a worker records its own dispatch as unknown.
const lostCallReason = "the call was dispatched but its outcome was never recorded (the worker stopped or lost the log during the call)"

// lostCall records the outcome of a's dispatch as unknown, saying why: the
// call went out and how it ended was never recorded, and nobody is making
// it now in this process. The call is never made again here;
// reconciliation settles it — unless a is a read, which is sent again
// instead (resendLostRead).
func (p *Plane) lostCall(ctx context.Context, taskID string, a *stewardv1.Action, c cause, reason string) error {
	release, ok := p.busy.take(a.ActionId)
	if !ok {
		return errBusy(a.ActionId) // the call is still going, in this process
	}
	defer release()
	// Only while the call is still silent: a heartbeat or an outcome from
	// its worker since the lease was read means it is alive after all.
	// The id is apart from the call's own outcome, so that a late answer
	// is refused by the fold, and said so (see outcome), not taken for
	// this one.
	silent := func(t *stewardv1.Task) bool {
		cur := task.FindAction(t, a.ActionId)
		return cur.GetStatus() == stewardv1.ActionStatus_ACTION_STATUS_DISPATCHED && cur.GetAttempt() == a.Attempt &&
			(cur.GetClaimedBy() == p.cfg.Worker || p.leaseLeft(cur) <= 0)
	}
	if resent, err := p.resendLostRead(ctx, taskID, a, c, reason, silent); resent || err != nil {
		return err
	}
	cost, err := p.attemptsCost(ctx, taskID, a)
	if err != nil {
		return err
	}
	return p.recordIf(ctx, taskID, event.ID(a.ActionId, event.TypeActionOutcome, fmt.Sprint(a.Attempt), "lost"), c,
		unknownOutcome(a, reason, cost, p.now()), silent)
}

// unknownOutcome is the outcome of a's dispatch, a call that may have
// been made, as unknown for reason, the calls made so far charged at
// cost. Reconciliation takes it up.
func unknownOutcome(a *stewardv1.Action, reason string, cost int64, now time.Time) *stewardv1.ActionOutcomeRecorded {
	return &stewardv1.ActionOutcomeRecorded{ActionId: a.ActionId, Outcome: &stewardv1.Outcome{
		Status: stewardv1.ActionStatus_ACTION_STATUS_UNKNOWN, FailureClass: stewardv1.FailureClass_FAILURE_CLASS_UNKNOWN,
		Reason: reason, FinishedAt: timestamppb.New(now), Attempt: a.Attempt, CostMicros: cost,
	}}
}

// refuse records that a claimed or waiting action will not be dispatched
// (again): what it would run does not check out. Its id is its own, apart
// from the outcome of any attempt already made.
func (p *Plane) refuse(ctx context.Context, taskID string, a *stewardv1.Action, c cause, res adapter.Result) error {
	cost, err := p.attemptsCost(ctx, taskID, a)
	if err != nil {
		return err
	}
	o := &stewardv1.Outcome{Status: res.Status, FailureClass: res.FailureClass, Reason: res.Reason, FinishedAt: timestamppb.New(p.now()), Attempt: a.Attempt, CostMicros: cost}
	// Only as the action was read: had another worker dispatched it since,
	// this refusal would be taken for the outcome of that call.
	unchanged := func(t *stewardv1.Task) bool {
		cur := task.FindAction(t, a.ActionId)
		return cur.GetStatus() == a.Status && cur.GetAttempt() == a.Attempt
	}
	return p.recordIf(ctx, taskID, event.ID(a.ActionId, "refused", fmt.Sprint(a.Attempt)), c, &stewardv1.ActionOutcomeRecorded{ActionId: a.ActionId, Outcome: o}, unchanged)
}

// attemptsCost is what the calls already made for a cost at the tool
// contract's price: a retry refused or not made still paid for them.
func (p *Plane) attemptsCost(ctx context.Context, taskID string, a *stewardv1.Action) (int64, error) {
	if a.Attempt == 0 {
		return 0, nil
	}
	tenant, err := p.tasks.Tenant(ctx, taskID)
	if err != nil {
		return 0, err
	}
	entry, err := p.cfg.Tools.Lookup(ctx, p.log, tenant, a.Tool, a.ToolVersion)
	if errs.Is(err, errs.NotFound) {
		return 0, nil // no price to charge by
	} else if err != nil {
		return 0, err
	}
	return entry.Tool.Contract.GetCostMicrosPerCall() * int64(a.Attempt), nil
}

// outcome records how attempt ended, with a succeeded result inline when
// small, else stored by hash. An unknown outcome goes to reconciliation (see reconcile).
func (p *Plane) outcome(ctx context.Context, taskID, actionID string, attempt uint32, c cause, res adapter.Result) error {
	o := &stewardv1.Outcome{Status: res.Status, FailureClass: res.FailureClass, Reason: res.Reason, FinishedAt: timestamppb.New(p.now()), Attempt: attempt, CostMicros: res.CostMicros, Tokens: res.Tokens}
	switch res.Status {
	case stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED:
		inline, ref, hash, err := p.cfg.Results.Keep(ctx, taskID, res.Body)
		if err != nil {
			return err
		}
		o.Result, o.ResultRef, o.ResultHash = inline, ref, hash
	case stewardv1.ActionStatus_ACTION_STATUS_UNKNOWN:
		o.FailureClass = stewardv1.FailureClass_FAILURE_CLASS_UNKNOWN
	}
	// A worker that lost its lease mid-call finds the action taken over:
	// its answer is not recorded (reconciliation settles the call from
	// the tool), and it says so.
	// What the action was when the write was decided: the build's task is
	// not ours to keep, so only these are.
	var nowStatus, nowOutcome stewardv1.ActionStatus
	var nowAttempt uint32
	ours := func(t *stewardv1.Task) bool {
		cur := task.FindAction(t, actionID)
		nowStatus, nowOutcome, nowAttempt = cur.GetStatus(), cur.GetOutcome().GetStatus(), cur.GetOutcome().GetAttempt()
		return nowStatus == stewardv1.ActionStatus_ACTION_STATUS_DISPATCHED && cur.GetAttempt() == attempt
	}
	err := p.recordIf(ctx, taskID, event.ID(actionID, event.TypeActionOutcome, fmt.Sprint(attempt)), c, &stewardv1.ActionOutcomeRecorded{ActionId: actionID, Outcome: o}, ours)
	if err != nil {
		return err
	}
	if nowAttempt == attempt && nowOutcome != res.Status && res.Status != stewardv1.ActionStatus_ACTION_STATUS_UNKNOWN {
		p.logger.Warn("the call's answer came after another worker took the action over; not recorded: reconciliation settles it from the tool",
			"task", taskID, "action", actionID, "attempt", attempt, "answer", task.ActionStatusName(res.Status), "now", task.ActionStatusName(nowStatus))
		return nil
	}
	crashpoint.Here(crashpoint.AfterOutcome)
	return nil
}
