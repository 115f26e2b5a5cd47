package execution

import (
	"context"
	"errors"
	"fmt"

	"github.com/steward-run/steward/pkg/crashpoint"
	"github.com/steward-run/steward/pkg/egress"
	"github.com/steward-run/steward/pkg/errs"
	"github.com/steward-run/steward/pkg/event"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/secret"
	"github.com/steward-run/steward/pkg/task"
	"github.com/steward-run/steward/services/execution/adapter"
)

// StatusQuerySettler is who settles an outcome from a tool's own answer.
const StatusQuerySettler = "status query"

// reconcileOutcome reacts to an unknown outcome by asking the tool.
func (p *Plane) reconcileOutcome(ctx context.Context, rec *stewardv1.EventRecord, o *stewardv1.ActionOutcomeRecorded) error {
	if o.GetOutcome().GetStatus() != stewardv1.ActionStatus_ACTION_STATUS_UNKNOWN {
		return nil
	}
	return p.reconcile(ctx, rec.Event.TaskId, o.ActionId, o.Outcome.Attempt, 0, causeOf(rec))
}

// reconcile settles an unknown outcome by asking the tool's status query,
// and asks again later (a durable timer, with backoff) until the answer is
// authoritative. Nothing is ever assumed: no answer, or "in progress",
// leaves the outcome unknown. A tool without a status query leaves it to a
// person (SettleAction).
//
// The answers: succeeded closes the action with the tool's result; failed
// fails it; not accepted — the tool has no record of the key and nothing
// is in flight — lets the same request go out once more with the same
// op_key (see armWait), and a second "not accepted" fails it.
func (p *Plane) reconcile(ctx context.Context, taskID, actionID string, attempt, check uint32, c cause) error {
	t, _, err := p.tasks.Load(ctx, taskID)
	if errs.Is(err, errs.NotFound) {
		return nil
	} else if err != nil {
		return err
	}
	a := task.FindAction(t, actionID)
	if a == nil || a.Status != stewardv1.ActionStatus_ACTION_STATUS_UNKNOWN || a.Attempt != attempt {
		return nil // settled already
	}
	entry, err := p.cfg.Tools.Lookup(ctx, p.log, t.Tenant, a.Tool, a.ToolVersion)
	if errs.Is(err, errs.NotFound) {
		p.logger.Warn("unknown outcome waits for a person: its tool is not registered here", "task", taskID, "action", actionID)
		return nil
	} else if err != nil {
		return err
	}
	ad, err := p.adapterFor(entry.Tool)
	if err != nil {
		p.logger.Warn("unknown outcome waits for a person: no adapter for its tool", "task", taskID, "action", actionID, "err", err)
		return nil
	}
	working := keepWorking(ctx)
	ans, err := ad.Status(ctx, adapter.Request{TaskID: taskID, ActionID: actionID, OpKey: a.OpKey, Tool: entry.Tool.Contract})
	working()
	// The answer is the tool's, and may quote the request it was sent.
	forms := p.secretForms(taskID, a)
	ans.Reason, ans.Result = secret.Redact(ans.Reason, forms), redactJSON(ans.Result, forms)
	if errors.Is(err, adapter.ErrNoStatusQuery) {
		p.logger.Info("unknown outcome waits for a person to settle it (SettleAction): the tool offers no status query", "task", taskID, "action", actionID)
		return nil
	}
	if refusal := (*egress.Refusal)(nil); errors.As(err, &refusal) {
		// Asking again is refused again: a person settles it, as for a
		// tool without a status query.
		p.logger.Warn("unknown outcome waits for a person to settle it (SettleAction): the egress rule refuses the tool's status_url", "task", taskID, "action", actionID, "err", refusal.Error())
		return nil
	}
	if err != nil || ans.State == adapter.StateInProgress {
		why := "in progress"
		if err != nil {
			why = secret.Redact(err.Error(), forms)
		}
		check++
		p.logger.Info("unknown outcome not settled yet; asking again later", "task", taskID, "action", actionID, "check", check, "answer", why)
		return p.waits.setTimer(ctx, timerReconcile, fmt.Sprintf("%s/%d/%d", a.OpKey, attempt, check), p.now().Add(reconcileDelay(check)), timerNote{
			TaskID: taskID, ActionID: actionID, Attempt: attempt, Check: check, Cause: c.id, Correlation: c.correlation,
		})
	}
	crashpoint.Here(crashpoint.DuringReconciliation)
	settled := &stewardv1.ActionSettled{ActionId: actionID, SettledBy: StatusQuerySettler, Reason: ans.Reason}
	switch ans.State {
	case adapter.StateSucceeded:
		body := ans.Result
		if len(body) == 0 {
			body = []byte("null")
		}
		if settled.ResultRef, settled.ResultHash, err = p.cfg.Results.Put(ctx, taskID, body); err != nil {
			return err
		}
		settled.State = stewardv1.SettleState_SETTLE_STATE_SUCCEEDED
	case adapter.StateFailed:
		settled.State = stewardv1.SettleState_SETTLE_STATE_FAILED
	case adapter.StateNotAccepted:
		settled.State = stewardv1.SettleState_SETTLE_STATE_NOT_ACCEPTED
		if a.Redispatched {
			settled.State = stewardv1.SettleState_SETTLE_STATE_FAILED
			settled.Reason = "the tool did not accept the request, again, after the one dispatch more that is allowed"
		}
	default:
		return nil // the adapter only returns valid states
	}
	return p.settle(ctx, taskID, a, c, settled)
}

// settle records a settlement of a's unknown outcome; the first one wins.
func (p *Plane) settle(ctx context.Context, taskID string, a *stewardv1.Action, c cause, s *stewardv1.ActionSettled) error {
	return p.record(ctx, taskID, settlementID(a), c, s)
}

// settlementID is the event id of a settlement of a's current attempt:
// one per attempt, whoever settles it.
func settlementID(a *stewardv1.Action) string {
	return event.ID(a.ActionId, event.TypeActionSettled, fmt.Sprint(a.Attempt))
}
