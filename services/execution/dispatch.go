package execution

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/steward-run/steward/pkg/errs"
	"github.com/steward-run/steward/pkg/event"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/task"
	"github.com/steward-run/steward/services/execution/adapter"
)

// execute reacts to a permit: claim, record pending, check, dispatch,
// record the outcome. Only the worker whose claim wins goes past the
// claim; for everyone else, and for any redelivery, the permit is done.
func (p *Plane) execute(ctx context.Context, rec *stewardv1.EventRecord) error {
	permit := rec.Event.GetActionPermitted().GetPermit()
	taskID := rec.Event.TaskId
	t, _, err := task.Load(ctx, p.log, taskID)
	if err != nil {
		return err
	}
	a := task.FindAction(t, permit.ActionId)
	if a.GetStatus() != stewardv1.ActionStatus_ACTION_STATUS_PERMITTED || a.Permit.GetPermitId() != permit.PermitId {
		return nil // claimed before, by us or another worker
	}
	if !task.Active(t.Status) {
		p.logger.Info("permit not claimed: the task is not running", "task", taskID, "action", a.ActionId, "status", task.StatusName(t.Status))
		return nil
	}
	won, err := p.claim(ctx, permit)
	if err != nil || !won {
		return err
	}
	if err := p.record(ctx, taskID, a.ActionId, event.TypeActionClaimed, rec.Event, &stewardv1.ActionClaimed{
		ActionId: a.ActionId, PermitId: permit.PermitId, Worker: p.cfg.Worker,
	}); err != nil {
		return err
	}
	// Recompute the request hash from the stored payload and compare with
	// the permit: what runs is exactly what was approved.
	body, err := p.cfg.Requests.Get(ctx, a.RequestRef, permit.RequestHash)
	if err != nil {
		if errs.Is(err, errs.Corrupt) {
			return p.dispatched(ctx, taskID, a, rec.Event, adapter.Result{
				Status: stewardv1.ActionStatus_ACTION_STATUS_FAILED, FailureClass: stewardv1.FailureClass_FAILURE_CLASS_DETERMINISTIC,
				Reason: "refused before dispatch: " + err.Error(),
			})
		}
		return err
	}
	entry, err := p.cfg.Tools.Get(a.Tool, a.ToolVersion)
	if err != nil {
		if err := p.cfg.Tools.Sync(ctx, p.log); err != nil {
			return err
		}
		if entry, err = p.cfg.Tools.Get(a.Tool, a.ToolVersion); err != nil {
			return err
		}
	}
	ad, err := p.cfg.Adapters.For(entry.Tool.Contract)
	if err != nil {
		return err
	}
	res := ad.Call(ctx, adapter.Request{TaskID: taskID, ActionID: a.ActionId, OpKey: a.OpKey, Tool: entry.Tool.Contract, Body: body})
	return p.dispatched(ctx, taskID, a, rec.Event, res)
}

// claim takes the permit for this worker. KV create-only is atomic across
// workers and processes: exactly one create of a key succeeds, ever. A
// worker that finds its own claim (a redelivery after a failed append)
// goes on with it.
func (p *Plane) claim(ctx context.Context, permit *stewardv1.ActionPermit) (bool, error) {
	key := "permit." + permit.PermitId
	_, err := p.cfg.Claims.Create(ctx, key, []byte(p.cfg.Worker))
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, jetstream.ErrKeyExists):
		e, gerr := p.cfg.Claims.Get(ctx, key)
		if gerr != nil {
			return false, errs.Wrap(errs.Unavailable, gerr, "read claim of permit %s", permit.PermitId)
		}
		return string(e.Value()) == p.cfg.Worker, nil
	default:
		return false, errs.Wrap(errs.Unavailable, err, "claim permit %s", permit.PermitId)
	}
}

// dispatched records the dispatch and its outcome. The dispatch record
// goes first so that the ledger shows a call that may have gone out even
// if the process dies before the outcome.
func (p *Plane) dispatched(ctx context.Context, taskID string, a *stewardv1.Action, cause *stewardv1.Event, res adapter.Result) error {
	if err := p.record(ctx, taskID, a.ActionId, event.TypeActionDispatched, cause, &stewardv1.ActionDispatched{ActionId: a.ActionId, Attempt: 1}); err != nil {
		return err
	}
	o := &stewardv1.Outcome{Status: res.Status, FailureClass: res.FailureClass, Reason: res.Reason, FinishedAt: timestamppb.Now(), Attempt: 1}
	if res.Status == stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED {
		ref, hash, err := p.cfg.Results.Put(ctx, res.Body)
		if err != nil {
			return err
		}
		o.ResultRef, o.ResultHash = ref, hash
	}
	return p.record(ctx, taskID, a.ActionId, event.TypeActionOutcome, cause, &stewardv1.ActionOutcomeRecorded{ActionId: a.ActionId, Outcome: o})
}

// record appends one ledger step with an id derived from the action, so a
// step already on the log is not appended again.
func (p *Plane) record(ctx context.Context, taskID, actionID, typ string, cause *stewardv1.Event, payload event.Payload) error {
	_, err := task.Update(ctx, p.log, taskID, func(*stewardv1.Task) (*stewardv1.Event, error) {
		return event.New(event.Meta{
			ID:            event.ID(actionID, typ),
			TaskID:        taskID,
			Actor:         &stewardv1.Actor{Principal: p.cfg.Worker, Plane: PlaneName},
			CausationID:   cause.EventId,
			CorrelationID: cause.CorrelationId,
		}, payload)
	})
	if err != nil {
		return fmt.Errorf("record %s for %s: %w", typ, actionID, err)
	}
	return nil
}
