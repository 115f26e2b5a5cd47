package control

import (
	"context"
	"math"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/proto"

	"github.com/steward-run/steward/pkg/errs"
	"github.com/steward-run/steward/pkg/event"
	"github.com/steward-run/steward/pkg/eventlog"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/requestid"
	"github.com/steward-run/steward/pkg/rpc"
	"github.com/steward-run/steward/pkg/task"
)

// ForkTask makes a fork of req.TaskId at req.AtSequence: a new task,
// named by the caller's request id as CreateTask's is, that starts from
// the parent's state at that point (task.ForkState, carried in its
// TaskCreated with the point's hash) under the parent's contract as it
// stood there, with a budget of its own: reserved from what a live parent
// has left where its budget limits (a BudgetConsumed on the parent, as a
// delegation reserves, given back as a delegation's is when the fork ends:
// release) — an ended parent's too, so that what it left is lent once,
// not to every fork. The parent is
// not otherwise touched; its history and the fork's never mix.
func (dg *delegation) ForkTask(ctx context.Context, principal string, req *stewardv1.ForkTaskRequest) (_ *stewardv1.Task, _ bool, err error) {
	if err := checkFork(req); err != nil {
		return nil, false, err
	}
	recs, err := dg.log.Read(ctx, req.TaskId)
	switch {
	case err != nil:
		return nil, false, err
	case len(recs) == 0:
		return nil, false, errs.New(errs.NotFound, "task %s not found", req.TaskId)
	}
	at := len(recs) - 1
	if req.AtSequence != 0 {
		if at = indexOfSequence(recs, req.AtSequence); at < 0 {
			return nil, false, errs.Field("at_sequence", "%d is not the sequence of an event of task %s", req.AtSequence, req.TaskId)
		}
	}
	parentAt, err := task.Fold(recs[:at+1])
	if err != nil {
		return nil, false, errs.Wrap(errs.Corrupt, err, "fold task %s up to the fork", req.TaskId)
	}
	parent, err := task.Fold(recs)
	if err != nil {
		return nil, false, errs.Wrap(errs.Corrupt, err, "fold task %s", req.TaskId)
	}
	if parent.Contract.GetParentTaskId() != "" {
		return nil, false, errs.New(errs.FailedPrecondition, "task %s was delegated from %s: fork the task it was delegated from", req.TaskId, parent.Contract.ParentTaskId)
	}
	forkID, _, err := dg.requestedTask(ctx, principal, req.RequestId)
	if err != nil {
		return nil, false, err
	}
	done, err := dg.admitTask(ctx, owner{tenant: parent.Tenant, principal: principal}, forkID)
	if err != nil {
		return nil, false, err
	}
	var t *stewardv1.Task
	var created bool
	defer func() { done(createdAt(t, created, err)) }()
	u, err := dg.claimRequestIDFor(ctx, principal, requestid.ForkTask, forkID, req.RequestId, req, requestid.RecordedBy(dg.exists(forkID)))
	if err != nil {
		return nil, false, err
	}
	defer u.settle(ctx, &err)
	if t, err := forked(ctx, dg.log, forkID); t != nil || err != nil {
		return t, false, err // a repeat: the claim found the same request
	}
	// A fork's credential is a root of its own, which no revocation of
	// the parent's, or above it (a run's schedule's), would reach.
	if why, err := dg.tasks.Revoked(ctx, parent); why != "" || err != nil {
		if err == nil {
			err = errs.New(errs.FailedPrecondition, "task %s may not be forked: %s", req.TaskId, why)
		}
		return nil, false, err
	}
	contract := forkContract(parentAt.Contract, forkID)
	origin := &stewardv1.ForkOrigin{ParentTaskId: req.TaskId, AtSequence: recs[at].Sequence, AtHash: recs[at].Event.Hash, Reason: req.Reason,
		State: task.ForkState(parentAt)}
	if err := dg.carry(ctx, req.TaskId, forkID, origin.State); err != nil {
		return nil, false, err
	}
	ev, err := dg.event(event.Meta{ID: event.ID(forkID, event.TypeTaskCreated), TaskID: forkID, Actor: dg.actor(principal), CorrelationID: req.RequestId},
		// A fork redoes its parent's work from a point, under the versions
		// the parent's rollouts assigned it (docs/rollouts.md).
		&stewardv1.TaskCreated{Contract: contract, RequestId: req.RequestId, Tenant: parent.Tenant, Fork: origin, RolloutAssignments: parentAt.RolloutAssignments})
	if err != nil {
		return nil, false, err
	}
	// A fork too large for the log is refused before anything is reserved
	// for it; the budget's largest values bound the event's size.
	contract.Budget.MaxTokens, contract.Budget.MaxCostMicros = math.MaxInt64, math.MaxInt64
	if err := dg.log.Fits(ctx, ev); err != nil {
		return nil, false, errs.Wrap(errs.TooLarge, err, "fork task %s at sequence %d: its state there", req.TaskId, origin.AtSequence)
	}
	if err := dg.reserveFork(ctx, principal, parent.Contract.GetTaskId(), forkID, req, contract.Budget); err != nil {
		return nil, false, err
	}
	t, created, err = openTask(ctx, dg.log, ev)
	return t, created, err
}

// forked is the fork forkID if it was made: a repeated request finds it
// as it was made, its point included, wherever the parent has moved since
// (at_sequence 0 names the parent's last event when first asked).
func forked(ctx context.Context, log *eventlog.Log, forkID string) (*stewardv1.Task, error) {
	recs, err := log.Read(ctx, forkID)
	if err != nil || len(recs) == 0 {
		return nil, err
	}
	t, err := task.Fold(recs)
	if err != nil {
		return nil, errs.Wrap(errs.Corrupt, err, "fold task %s", forkID)
	}
	return t, nil
}

func checkFork(req *stewardv1.ForkTaskRequest) error {
	if err := checkCommand(req.TaskId, req.RequestId, req.Reason); err != nil {
		return err
	}
	switch {
	case req.RequestId == "":
		return errs.Field("request_id", "is required: it names the fork")
	case req.Reason == "":
		return errs.Field("reason", "is required: say what the fork does differently")
	case req.MaxTokens < 0:
		return errs.Field("max_tokens", "must not be negative")
	case req.MaxCostMicros < 0:
		return errs.Field("max_cost_micros", "must not be negative")
	}
	return nil
}

// indexOfSequence is the index of the record at seq in recs, or -1.
func indexOfSequence(recs []*stewardv1.EventRecord, seq uint64) int {
	for i, r := range recs {
		if r.Sequence == seq {
			return i
		}
	}
	return -1
}

// forkContract is the fork's contract: the parent's as it stood at the
// fork, under the fork's id, with no credential (governance issues its
// own) and a budget set by reserveFork.
func forkContract(parent *stewardv1.TaskContract, forkID string) *stewardv1.TaskContract {
	c := proto.CloneOf(parent)
	c.TaskId, c.CredentialRef = forkID, ""
	c.Budget = &stewardv1.Budget{Currency: parent.GetBudget().GetCurrency()}
	return c
}

// reserveFork sets the fork's budget b from req and the parent's: in
// each dimension the parent's budget limits, the fork's cap is req's
// (required) within what the parent has left, reserved on the parent —
// live or ended — by one conditional write. A retry finds its
// reservation.
func (dg *delegation) reserveFork(ctx context.Context, principal, parentID, forkID string, req *stewardv1.ForkTaskRequest, b *stewardv1.Budget) error {
	id := forkReserveID(parentID, forkID)
	if _, history, err := dg.tasks.Load(ctx, parentID); err != nil {
		return err
	} else if history.Has(id) {
		ev, err := commandEvent(ctx, dg.log, parentID, id)
		if err != nil {
			return err
		}
		r := ev.GetBudgetConsumed()
		b.MaxTokens, b.MaxCostMicros = max(r.GetTokens(), req.MaxTokens), max(r.GetCostMicros(), req.MaxCostMicros)
		return nil
	}
	return dg.tasks.Write(ctx, parentID, func(parent *stewardv1.Task) (*stewardv1.Event, error) {
		pb, used := parent.Contract.GetBudget(), parent.BudgetUsed
		tokens, err := headroom("max_tokens", parent, "tokens", req.MaxTokens, pb.GetMaxTokens(), used.GetTokens(), 0)
		if err != nil {
			return nil, err
		}
		cost, err := headroom("max_cost_micros", parent, "cost micro-units", req.MaxCostMicros, pb.GetMaxCostMicros(), used.GetCostMicros(), 0)
		if err != nil {
			return nil, err
		}
		b.MaxTokens, b.MaxCostMicros = tokens.cap, cost.cap
		if tokens.reserved == 0 && cost.reserved == 0 {
			return nil, nil
		}
		if lenderID, _ := lender(parent); lenderID != "" && task.Terminal(parent.Status) {
			// What an ended fork left went back to its own lender (release).
			return nil, errs.New(errs.FailedPrecondition, "task %s has ended and gave what it left back to %s: fork that one", parentID, lenderID)
		}
		return dg.event(event.Meta{ID: id, TaskID: parentID, Actor: dg.actor(principal)}, &stewardv1.BudgetConsumed{
			Tokens: tokens.reserved, CostMicros: cost.reserved, Source: "reserved for fork " + forkID, ReservedFor: forkID,
		})
	})
}

func (s *taskService) ForkTask(ctx context.Context, req *connect.Request[stewardv1.ForkTaskRequest]) (*connect.Response[stewardv1.ForkTaskResponse], error) {
	t, created, err := s.plane.delegation.ForkTask(ctx, rpc.Principal(ctx), req.Msg)
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&stewardv1.ForkTaskResponse{Task: t, Created: created}), nil
}
