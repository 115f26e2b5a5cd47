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

// resume runs the permits a task received while it was paused.
func (p *Plane) resume(ctx context.Context, rec *stewardv1.EventRecord) error {
	t, _, err := task.Load(ctx, p.log, rec.Event.TaskId)
	if err != nil {
		return err
	}
	for _, a := range t.Actions {
		if a.Status != stewardv1.ActionStatus_ACTION_STATUS_PERMITTED {
			continue
		}
		if err := p.run(ctx, rec.Event.TaskId, a.Permit, rec.Event); err != nil {
			return err
		}
	}
	return nil
}

// execute reacts to a permit: claim, record the claim, check the stored
// request, record the dispatch, call the tool, record the outcome. Only the
// worker whose claim wins goes past the claim. A redelivery to that worker
// continues from what the ledger shows; a dispatch already recorded is
// never repeated: with no outcome on the log, the outcome is unknown.
func (p *Plane) execute(ctx context.Context, rec *stewardv1.EventRecord) error {
	return p.run(ctx, rec.Event.TaskId, rec.Event.GetActionPermitted().GetPermit(), rec.Event)
}

// run carries one permit as far as the ledger lets it go; cause is the
// event that prompted it.
func (p *Plane) run(ctx context.Context, taskID string, permit *stewardv1.ActionPermit, cause *stewardv1.Event) error {
	t, _, err := task.Load(ctx, p.log, taskID)
	if err != nil {
		return err
	}
	a := task.FindAction(t, permit.ActionId)
	if a == nil || a.Permit.GetPermitId() != permit.PermitId {
		return nil
	}
	switch a.Status {
	case stewardv1.ActionStatus_ACTION_STATUS_PERMITTED:
		if !task.Active(t.Status) {
			// Paused: the permit waits for the resume. Ended: it is moot.
			p.logger.Info("permit not claimed: the task is not running", "task", taskID, "action", a.ActionId, "status", task.StatusName(t.Status))
			return nil
		}
		won, err := p.claim(ctx, permit)
		if err != nil || !won {
			return err
		}
		if err := p.record(ctx, taskID, a.ActionId, event.TypeActionClaimed, cause, &stewardv1.ActionClaimed{
			ActionId: a.ActionId, PermitId: permit.PermitId, Worker: p.cfg.Worker,
		}); err != nil {
			return err
		}
	case stewardv1.ActionStatus_ACTION_STATUS_CLAIMED:
		if a.ClaimedBy != p.cfg.Worker {
			return nil // another worker's
		}
	case stewardv1.ActionStatus_ACTION_STATUS_DISPATCHED:
		if a.ClaimedBy != p.cfg.Worker {
			return nil
		}
		return p.outcome(ctx, taskID, a, cause, adapter.Result{
			Status: stewardv1.ActionStatus_ACTION_STATUS_UNKNOWN,
			Reason: "the call was dispatched but its outcome was never recorded (the worker stopped or lost the log during the call)",
		})
	default:
		return nil // done before
	}
	refuse := func(why string, err error) error {
		return p.outcome(ctx, taskID, a, cause, adapter.Result{
			Status: stewardv1.ActionStatus_ACTION_STATUS_FAILED, FailureClass: stewardv1.FailureClass_FAILURE_CLASS_DETERMINISTIC,
			Reason: "refused before dispatch: " + why + ": " + err.Error(),
		})
	}
	// Recompute the request hash from the stored payload and compare with
	// the permit: what runs is exactly what was approved.
	body, err := p.cfg.Requests.Get(ctx, a.RequestRef, permit.RequestHash)
	if errs.Is(err, errs.Corrupt) {
		return refuse("the stored request does not match the permit", err)
	} else if err != nil {
		return err
	}
	entry, err := p.cfg.Tools.Lookup(ctx, p.log, a.Tool, a.ToolVersion)
	if errs.Is(err, errs.NotFound) {
		return refuse("the tool is not registered here", err)
	} else if err != nil {
		return err
	}
	ad, err := p.cfg.Adapters.For(entry.Tool.Contract)
	if err != nil {
		return refuse("no adapter for the tool", err)
	}
	// Record the dispatch before the call, so that a call that may have
	// gone out is on the ledger even if this process dies during it.
	if err := p.record(ctx, taskID, a.ActionId, event.TypeActionDispatched, cause, &stewardv1.ActionDispatched{ActionId: a.ActionId, Attempt: 1}); err != nil {
		return err
	}
	res := ad.Call(ctx, adapter.Request{TaskID: taskID, ActionID: a.ActionId, OpKey: a.OpKey, Tool: entry.Tool.Contract, Body: body})
	return p.outcome(ctx, taskID, a, cause, res)
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

// outcome records how the call ended, with a succeeded result stored by
// hash.
func (p *Plane) outcome(ctx context.Context, taskID string, a *stewardv1.Action, cause *stewardv1.Event, res adapter.Result) error {
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
