package governance

import (
	"context"

	"github.com/steward-run/steward/pkg/errs"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/task"
)

// redrive reacts to a stall mark (the state plane's watchdog: a task with
// no event for longer than its bound) by deciding again on what waits on
// governance alone, as the reaction to the event that should have brought
// it here would have: an action proposed, or evaluated and not yet sent
// to a person, is decided (decide); an approved one is permitted or
// denied (afterDecision, with the decision that completed its approval);
// a revalidating one is revalidated (revalidate); a plan version not yet
// judged is judged (judgePlan), and a contract revision too (judgeRevision). Each is that reaction, run again: every
// id derives from the action or the plan, and every step runs only if the
// ledger says it has not, so nothing is recorded twice. What waits on a
// person (an approval asked for) is left to the approval's own timers.
func (p *Plane) redrive(ctx context.Context, rec *stewardv1.EventRecord, _ *stewardv1.TaskStalled) error {
	taskID := rec.Event.TaskId
	t, _, err := p.tasks.LoadSince(ctx, taskID, rec.Sequence)
	if err != nil || !task.Working(t.Status) {
		return err
	}
	var first error
	switch pl := t.Plan; {
	case task.PlanApproved(pl):
		p.logger.Warn("re-driving a stalled task: judging its approved plan again", "task", taskID, "plan_version", pl.Version)
		first = p.redriveDecided(ctx, taskID, pl.Approval.ApprovalId, p.afterPlanDecision)
	case task.PlanUnjudged(pl):
		p.logger.Warn("re-driving a stalled task: judging its plan again", "task", taskID, "plan_version", pl.Version)
		first = p.judgePlan(ctx, rec, &stewardv1.PlanSubmitted{Plan: &stewardv1.Plan{Version: pl.Version}, PlanHash: pl.PlanHash})
	}
	if r := task.OpenRevision(t); r != nil && r.Snapshot == nil {
		p.logger.Warn("re-driving a stalled task: judging its contract revision again", "task", taskID, "revision", r.RevisionId)
		if err := p.judgeRevision(ctx, rec, &stewardv1.ContractRevisionProposed{RevisionId: r.RevisionId, ContractHash: r.ContractHash}); first == nil {
			first = err
		}
	}
	for _, a := range t.Actions {
		var err error
		switch a.Status {
		case stewardv1.ActionStatus_ACTION_STATUS_PROPOSED, stewardv1.ActionStatus_ACTION_STATUS_EVALUATED:
			p.warnRedrive(taskID, a)
			err = p.judge(ctx, rec, &stewardv1.ActionProposed{Action: &stewardv1.Action{ActionId: a.ActionId}})
		case stewardv1.ActionStatus_ACTION_STATUS_APPROVED:
			p.warnRedrive(taskID, a)
			err = p.redriveDecided(ctx, taskID, a.Approval.GetApprovalId(), p.afterDecision)
		case stewardv1.ActionStatus_ACTION_STATUS_REVALIDATING:
			p.warnRedrive(taskID, a)
			err = p.revalidate(ctx, rec, &stewardv1.ActionRevalidating{ActionId: a.ActionId, PermitId: a.Permit.GetPermitId()})
		}
		if first == nil {
			first = err
		}
	}
	return first
}

func (p *Plane) warnRedrive(taskID string, a *stewardv1.Action) {
	p.logger.Warn("re-driving a stalled task: deciding on its action again", "task", taskID, "action", a.ActionId,
		"status", task.ActionStatusName(a.Status))
}

// redriveDecided runs after again — afterDecision for an action,
// afterPlanDecision for a plan — on the decision that completed approval
// approvalID of task taskID, read from the log: the vote as it was
// recorded, signature and all, so that it is checked as it was the first
// time.
func (p *Plane) redriveDecided(ctx context.Context, taskID, approvalID string, after func(context.Context, *stewardv1.EventRecord, *stewardv1.ApprovalDecided) error) error {
	recs, err := p.log.Read(ctx, taskID)
	if err != nil {
		return err
	}
	for i := len(recs) - 1; i >= 0; i-- {
		d := recs[i].Event.GetApprovalDecided()
		if d != nil && d.ApprovalId == approvalID && d.Decision == stewardv1.ApprovalDecision_APPROVAL_DECISION_APPROVE {
			return after(ctx, recs[i], d)
		}
	}
	// The fold approved it on a decision the read does not show yet.
	return errs.New(errs.Unavailable, "task %s: the decision on approval %s is not on the log yet", taskID, approvalID)
}
