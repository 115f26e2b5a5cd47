package control

import (
	"context"

	"github.com/steward-run/steward/pkg/errs"
	"github.com/steward-run/steward/pkg/event"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/task"
)

// reserveID is the id of the event that reserves childID's budget on its
// parent.
func reserveID(parentID, childID string) string {
	return event.ID(parentID, "delegation-reserve", childID)
}

// forkReserveID is the id of the event that reserves forkID's budget on
// the task it was forked from.
func forkReserveID(parentID, forkID string) string {
	return event.ID(parentID, "fork-reserve", forkID)
}

// lender is the task t's budget was reserved from, and the id of that
// reservation: its parent for a sub-task, the task it was forked from for
// a fork; "" for neither. What t does not spend goes back there when it
// ends (release).
func lender(t *stewardv1.Task) (parentID, reservation string) {
	taskID := t.Contract.GetTaskId()
	switch {
	case t.Contract.GetParentTaskId() != "":
		return t.Contract.ParentTaskId, reserveID(t.Contract.ParentTaskId, taskID)
	case t.ForkedFrom != nil:
		return t.ForkedFrom.ParentTaskId, forkReserveID(t.ForkedFrom.ParentTaskId, taskID)
	}
	return "", ""
}

// reserve takes what a sub-task may spend out of its parent's budget,
// before the sub-task exists: a BudgetConsumed on the parent, "reserved
// for delegated task …", for every dimension the parent's budget limits.
// So a parent and everything delegated from it together spend no more than
// the parent's budget, however many sub-tasks it hands work to. Where the
// parent's budget limits, c must name its cap, and it must fit in what the
// parent has left (and in the parent credential's cap); where only the
// credential caps, an unset cap is the credential's. What a sub-task does
// not spend comes back when it ends (release).
//
// The check and the reservation are one conditional write on the parent,
// so two delegations at once cannot take the same budget. A retry finds
// its reservation made and takes the caps from it, so the sub-task's
// contract comes out the same. still, if not nil, is checked on the parent
// as the write finds it: its error refuses the delegation there.
func (dg *delegation) reserve(ctx context.Context, principal, parentID, childID string, c *stewardv1.TaskContract, pc *stewardv1.TaskCredential, still func(*stewardv1.Task) error) error {
	id := reserveID(parentID, childID)
	parent, history, err := dg.tasks.Load(ctx, parentID)
	if err != nil {
		return err
	}
	if c.Budget == nil {
		c.Budget = &stewardv1.Budget{}
	}
	b := c.Budget
	if history.Has(id) {
		ev, err := commandEvent(ctx, dg.log, parentID, id)
		if err != nil {
			return err
		}
		r, pb := ev.GetBudgetConsumed(), parent.Contract.GetBudget()
		b.MaxTokens = capOnRetry(r.GetTokens(), pb.GetMaxTokens(), b.MaxTokens, pc.MaxTokens)
		b.MaxCostMicros = capOnRetry(r.GetCostMicros(), pb.GetMaxCostMicros(), b.MaxCostMicros, pc.MaxCostMicros)
		return nil
	}
	explicitTokens, explicitCost := b.MaxTokens, b.MaxCostMicros
	err = dg.tasks.Write(ctx, parentID, func(parent *stewardv1.Task) (*stewardv1.Event, error) {
		if still != nil {
			if err := still(parent); err != nil {
				return nil, err
			}
		}
		if !task.Active(parent.Status) && parent.Status != stewardv1.TaskStatus_TASK_STATUS_PENDING {
			// Paused, suspended (its budget spent, say), waiting for
			// input, produced or compensating: nothing new starts.
			return nil, errs.New(errs.FailedPrecondition, "parent task %s is %s: only a live task delegates", parentID, task.StatusName(parent.Status))
		}
		tokens, err := headroom("contract.budget.max_tokens", parent, "tokens", explicitTokens, parent.Contract.GetBudget().GetMaxTokens(), parent.BudgetUsed.GetTokens(), pc.MaxTokens)
		if err != nil {
			return nil, err
		}
		cost, err := headroom("contract.budget.max_cost_micros", parent, "cost micro-units", explicitCost, parent.Contract.GetBudget().GetMaxCostMicros(), parent.BudgetUsed.GetCostMicros(), pc.MaxCostMicros)
		if err != nil {
			return nil, err
		}
		b.MaxTokens, b.MaxCostMicros = tokens.cap, cost.cap
		if err := checkBudget(b); err != nil {
			return nil, err // milestones must fit the caps
		}
		if tokens.reserved == 0 && cost.reserved == 0 {
			return nil, nil // the parent's budget limits nothing
		}
		return dg.event(event.Meta{ID: id, TaskID: parentID, Actor: dg.actor(principal)}, &stewardv1.BudgetConsumed{
			Tokens: tokens.reserved, CostMicros: cost.reserved, Source: task.DelegationReserveSource + childID,
		})
	})
	return err
}

// share is a sub-task's cap in one dimension, and how much of it is
// reserved from the parent.
type share struct{ cap, reserved int64 }

// headroom works out a sub-task's cap in one dimension: the explicit cap
// if it fits in what the parent has left, else all of that. limit is the
// parent's budget (0: none), used what it spent, credCap its credential's
// cap (0: none).
func headroom(field string, parent *stewardv1.Task, what string, explicit, limit, used, credCap int64) (share, error) {
	left := int64(0)
	switch {
	case limit == 0 && credCap == 0:
		return share{cap: explicit}, nil // nothing to reserve from
	case limit == 0:
		left = credCap
	default:
		left = max(limit-used, 0)
		if credCap != 0 {
			left = min(left, credCap)
		}
	}
	reserve := func(n int64) share {
		if limit == 0 {
			return share{cap: n}
		}
		return share{cap: n, reserved: n}
	}
	switch {
	case left == 0:
		return share{}, errs.New(errs.FailedPrecondition, "parent task %s has no %s left to delegate (%d of %d spent or reserved)", parent.Contract.GetTaskId(), what, used, limit)
	case explicit == 0 && limit != 0:
		// Taking all that is left by default would leave the parent, and
		// every later sub-task, with nothing: say how much.
		return share{}, errs.Field(field, "is required: parent task %s limits its %s, and has %d left to hand on", parent.Contract.GetTaskId(), what, left)
	case explicit == 0:
		return share{cap: left}, nil // the parent credential's cap
	case explicit > left:
		return share{}, errs.Field(field, "%d is more than the %d %s parent task %s has left to delegate", explicit, left, what, parent.Contract.GetTaskId())
	}
	return reserve(explicit), nil
}

// capOnRetry is the cap a retried delegation had the first time: what it
// reserved where the parent's budget limits, else as headroom gave it.
func capOnRetry(reserved, limit, explicit, credCap int64) int64 {
	switch {
	case limit != 0:
		return reserved
	case explicit != 0:
		return explicit
	}
	return credCap
}

// releaseID is the id of the event that gives back what childID did not
// spend of its reservation on its parent.
func releaseID(parentID, childID string) string {
	return event.ID(parentID, "delegation-release", childID)
}

// release reacts to a task's end, and to the outcomes of calls still out
// when it ended: if it was delegated, once it has ended with no call in
// flight (settled), what its parent reserved for it and it had not spent
// goes back to the parent (BudgetReleased). Until then a call's cost may
// still land on it. Spending at that point includes what it had reserved
// for sub-tasks of its own still running; each of those gives back to it
// when it ends, and passOn sends that on up. The task is judged as it was
// when it settled, not as later releases left it, so whichever event
// triggers it, the release is the same, and nothing comes back twice.
// Idempotent: the release's id derives from the sub-task.
func (dg *delegation) release(ctx context.Context, rec *stewardv1.EventRecord) error {
	taskID := rec.Event.TaskId
	g, err := dg.owedBy(ctx, rec, func(parentID string) string { return releaseID(parentID, taskID) })
	if err != nil || g == nil {
		return err
	}
	child, _, err := settled(g.history, taskID)
	if err != nil || child == nil {
		return err
	}
	return dg.giveBack(ctx, rec, g.parentID, g.id, &stewardv1.BudgetReleased{
		ChildTaskId: taskID,
		Tokens:      owed(g.reserved.GetTokens(), child.BudgetUsed.GetTokens()),
		CostMicros:  owed(g.reserved.GetCostMicros(), child.BudgetUsed.GetCostMicros()),
	})
}

// passOn reacts to a release that came to a task after it had settled:
// its own release counted that reservation as spent, so what came back
// goes on to its parent, and from there up as far as the chain reserved.
// What goes on is what the parent is owed because of it, dimension by
// dimension: nothing in a dimension the parent did not reserve, and only
// the part past an overspend. Idempotent: the id derives from the release
// passed on.
func (dg *delegation) passOn(ctx context.Context, rec *stewardv1.EventRecord) error {
	taskID := rec.Event.TaskId
	g, err := dg.owedBy(ctx, rec, func(parentID string) string {
		return event.ID(parentID, "delegation-pass-on", rec.Event.EventId)
	})
	if err != nil || g == nil {
		return err
	}
	ended, at, err := settled(g.history, taskID)
	if err != nil || ended == nil || at > rec.Sequence {
		return err // a task not settled before it counts it in its own release
	}
	after, err := foldUpTo(g.history, taskID, rec.Sequence)
	if err != nil {
		return err
	}
	r, u, res := rec.Event.GetBudgetReleased(), after.BudgetUsed, g.reserved
	from := r.PassedOnFromTaskId
	if from == "" {
		from = r.ChildTaskId
	}
	return dg.giveBack(ctx, rec, g.parentID, g.id, &stewardv1.BudgetReleased{
		ChildTaskId:        taskID,
		Tokens:             owed(res.GetTokens(), u.GetTokens()) - owed(res.GetTokens(), u.GetTokens()+r.Tokens),
		CostMicros:         owed(res.GetCostMicros(), u.GetCostMicros()) - owed(res.GetCostMicros(), u.GetCostMicros()+r.CostMicros),
		PassedOnFromTaskId: from,
	})
}

// owed is what a parent that reserved reserved is owed back by a sub-task
// that used used.
func owed(reserved, used int64) int64 { return max(reserved-used, 0) }

// giving is what a release to a sub-task's parent needs: where it goes,
// its id, what was reserved, and the sub-task's history.
type giving struct {
	parentID, id string
	reserved     *stewardv1.BudgetConsumed
	history      []*stewardv1.EventRecord
}

// owedBy returns what giving back from rec's task to its parent (the task
// it was delegated or forked from, lender) under the id idFor names needs,
// or nil when there is nothing to give: the task was neither delegated nor
// forked, or has not ended, its parent reserved nothing for it, or
// the release is recorded already. Those are answered from cached views
// (without a read when the task's holds rec already); only a release still
// to be made reads the logs.
func (dg *delegation) owedBy(ctx context.Context, rec *stewardv1.EventRecord, idFor func(parentID string) string) (*giving, error) {
	taskID := rec.Event.TaskId
	var parentID, reserved string
	err := dg.tasks.Peek(ctx, taskID, rec.Sequence, func(t *stewardv1.Task) {
		if task.Terminal(t.Status) {
			parentID, reserved = lender(t)
		}
	})
	if err != nil || parentID == "" {
		return nil, err
	}
	_, parent, err := dg.tasks.Load(ctx, parentID)
	if err != nil {
		return nil, err
	}
	g := &giving{parentID: parentID, id: idFor(parentID)}
	if !parent.Has(reserved) || parent.Has(g.id) {
		return nil, nil
	}
	ev, err := commandEvent(ctx, dg.log, parentID, reserved)
	if err != nil {
		return nil, err
	}
	g.reserved = ev.GetBudgetConsumed()
	if g.history, err = dg.log.Read(ctx, taskID); err != nil {
		return nil, err
	}
	return g, nil
}

// giveBack records r on parentID, caused by rec; a release of nothing is
// not recorded.
func (dg *delegation) giveBack(ctx context.Context, rec *stewardv1.EventRecord, parentID, id string, r *stewardv1.BudgetReleased) error {
	if r.Tokens == 0 && r.CostMicros == 0 {
		return nil
	}
	err := dg.tasks.Write(ctx, parentID, func(*stewardv1.Task) (*stewardv1.Event, error) {
		return dg.event(event.Meta{
			ID: id, TaskID: parentID, Actor: dg.actor(stewardPrincipal),
			CausationID: rec.Event.EventId, CorrelationID: rec.Event.CorrelationId,
		}, r)
	})
	return err
}

// settled is the task with history recs as it was when it first stood
// ended with no call in flight, and the sequence of that event; nil while
// it has not.
func settled(recs []*stewardv1.EventRecord, taskID string) (*stewardv1.Task, uint64, error) {
	t := &stewardv1.Task{}
	for _, r := range recs {
		if err := task.Apply(t, r.Event, r.Sequence); err != nil {
			return nil, 0, errs.Wrap(errs.Corrupt, err, "task %s", taskID)
		}
		if task.Terminal(t.Status) && !callsOut(t) {
			return t, r.Sequence, nil
		}
	}
	return nil, 0, nil
}

// foldUpTo is the task with history recs as it was once the event at seq
// was recorded.
func foldUpTo(recs []*stewardv1.EventRecord, taskID string, seq uint64) (*stewardv1.Task, error) {
	n := 0
	for n < len(recs) && recs[n].Sequence <= seq {
		n++
	}
	t, err := task.Fold(recs[:n])
	if err != nil {
		return nil, errs.Wrap(errs.Corrupt, err, "task %s", taskID)
	}
	return t, nil
}

// callsOut reports whether an action of t's may still have a cost land on
// t: a call at its tool or of unknown outcome, or one waiting to retry,
// which the execution plane closes with the cost of the attempts made
// when an ended task's wait is over, or one gone back to governance after
// a call (revalidating: governance denies it in an ended task, with the
// calls' cost). A claim never dispatched costs nothing.
func callsOut(t *stewardv1.Task) bool {
	for _, a := range t.Actions {
		switch a.Status {
		case stewardv1.ActionStatus_ACTION_STATUS_DISPATCHED, stewardv1.ActionStatus_ACTION_STATUS_UNKNOWN, stewardv1.ActionStatus_ACTION_STATUS_WAITING:
			return true
		case stewardv1.ActionStatus_ACTION_STATUS_REVALIDATING:
			if a.Attempt > 0 {
				return true
			}
		}
	}
	return false
}
