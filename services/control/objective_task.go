package control

import (
	"context"
	"errors"

	"google.golang.org/protobuf/proto"

	"github.com/steward-run/steward/pkg/errs"
	"github.com/steward-run/steward/pkg/event"
	"github.com/steward-run/steward/pkg/eventlog"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/objective"
)

// objectiveTaskID is the id of the event that reserves taskID's budget on
// objective id: derived from both, so that a retried CreateTask (the same
// task id, from its request id) finds its reservation made.
func objectiveTaskID(id, taskID string) string {
	return event.ID(id, "objective-task", taskID)
}

// join checks that principal may start task taskID, whose
// contract c names an objective, for it — the objective exists in the
// caller's tenant, is open, and principal is its owner or an operator —
// and reserves the task's budget out of the objective's
// (ObjectiveTaskAdded). Where the objective limits a dimension, the task
// must name its cap in it, in the objective's currency (an unset currency
// takes it, so c may change). The check and the reservation are one
// conditional append on the objective's chain: two tasks at once cannot
// take the same budget; the one that finds the chain moved on re-reads
// and is checked again. It is the task's side effect before the task's
// own conditional write: a reservation whose task is then never created
// stays (docs/objectives.md).
func (p objectives) join(ctx context.Context, principal, taskID string, c *stewardv1.TaskContract) error {
	id := c.GetObjectiveId()
	if id == "" {
		return nil
	}
	for try := 1; ; try++ {
		o, err := p.load(ctx, "contract.objective_id", id)
		if err != nil {
			return err
		}
		if made := p.cache.added(id, taskID); made != nil {
			return sameShare(o, c, made) // a retry: reserved once
		}
		if err := mayAnswerFor(ctx, principal, o, "contract.objective_id"); err != nil {
			return err
		}
		if o.Status != stewardv1.ObjectiveStatus_OBJECTIVE_STATUS_OPEN {
			return &errs.Error{Code: errs.FailedPrecondition, Field: "contract.objective_id",
				Message: "objective " + id + " is " + objective.StatusName(o.Status) + ": no new task works for it"}
		}
		added, err := objectiveShare(o, c)
		if err != nil {
			return err
		}
		added.TaskId = taskID
		ev, err := p.event(event.Meta{ID: objectiveTaskID(id, taskID), TaskID: id, Actor: p.actor(principal)}, added)
		if err != nil {
			return err
		}
		// The fold refuses what the budget cannot take, before the write.
		if err := objective.Apply(proto.CloneOf(o), ev, 0); err != nil {
			return err
		}
		_, err = p.log.Append(ctx, eventlog.Head{Sequence: o.LastSequence, Hash: o.LastHash}, ev)
		if errors.Is(err, eventlog.ErrConflict) && try < maxObjectiveTries {
			continue
		}
		return err
	}
}

// sameShare checks that c, a retry's contract for a task reserved for
// already, asks for what was reserved (made): a first try that reserved
// and died before its task was written frees its request id, and a
// retry under it with a larger budget would otherwise spend what the
// objective never reserved for it.
func sameShare(o *stewardv1.Objective, c *stewardv1.TaskContract, made *stewardv1.ObjectiveTaskAdded) error {
	want, err := objectiveShare(o, c)
	if err != nil {
		return err
	}
	if want.Tokens != made.Tokens || want.CostMicros != made.CostMicros {
		return errs.Field("contract.budget", "task %s reserved %d tokens and %d cost micro-units out of objective %s already: its retry must ask for the same, not %d and %d",
			made.TaskId, made.Tokens, made.CostMicros, o.ObjectiveId, want.Tokens, want.CostMicros)
	}
	return nil
}

// objectiveShare is what task c reserves out of objective o: its caps where o
// limits, naming the contract's field when one is missing or in another
// currency.
func objectiveShare(o *stewardv1.Objective, c *stewardv1.TaskContract) (*stewardv1.ObjectiveTaskAdded, error) {
	ob := o.GetBudget()
	if c.Budget == nil {
		c.Budget = &stewardv1.Budget{}
	}
	b := c.Budget
	added := &stewardv1.ObjectiveTaskAdded{}
	if ob.GetMaxTokens() > 0 {
		if b.MaxTokens == 0 {
			return nil, errs.Field("contract.budget.max_tokens", "is required: objective %s limits tokens, and has %d left", o.ObjectiveId, objective.Left(ob.MaxTokens, o.ReservedTokens))
		}
		added.Tokens = b.MaxTokens
	}
	if ob.GetMaxCostMicros() > 0 {
		switch {
		case b.MaxCostMicros == 0:
			return nil, errs.Field("contract.budget.max_cost_micros", "is required: objective %s limits cost, and has %d micro-units left", o.ObjectiveId, objective.Left(ob.MaxCostMicros, o.ReservedCostMicros))
		case b.Currency == "":
			b.Currency = ob.Currency
		case b.Currency != ob.Currency:
			return nil, errs.Field("contract.budget.currency", "%s is not objective %s's %s: caps in different currencies cannot be compared", errs.Quote(b.Currency), o.ObjectiveId, errs.Quote(ob.Currency))
		}
		added.CostMicros = b.MaxCostMicros
	}
	return added, nil
}

// inheritObjective gives a sub-task its parent's objective: a sub-task
// spends out of its parent's budget, which the parent reserved from the
// objective, so it reserves nothing there itself. A contract naming
// another objective is refused.
func inheritObjective(c *stewardv1.TaskContract, parent *stewardv1.Task) error {
	want := parent.Contract.GetObjectiveId()
	if c.ObjectiveId != "" && c.ObjectiveId != want {
		return errs.Field("contract.objective_id", "%s is not the parent's objective (%s): a sub-task works for its parent's", errs.Quote(c.ObjectiveId), errs.Quote(want))
	}
	c.ObjectiveId = want
	return nil
}

// checkObjectiveRef checks the form of a contract's objective_id.
func checkObjectiveRef(id string) error {
	if id != "" && !eventlog.ValidTaskID(id) {
		return errs.Field("contract.objective_id", "%s is not an objective id: "+eventlog.TaskIDRule, errs.Quote(id))
	}
	return nil
}
