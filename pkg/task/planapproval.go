package task

import (
	"google.golang.org/protobuf/proto"

	"github.com/steward-run/steward/pkg/errs"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// The approval of a whole plan version (docs/plans.md, "Plan policy"):
// when governance's judgement of the version in force asks for one, it
// opens one Approval bound to the version's hash (PlanState.approval),
// people vote on it as on an action's (approval.go), and governance, once
// it has verified the votes and evaluated policy again, judges the
// version a second time, naming the approval: only that makes it
// approved. A new version has no approval; the old one's closes with it.

// planApprovalStep folds the approval of a plan, its votes and its
// reminders: an ApprovalRequested or ApprovalDecided with a plan hash, an
// ApprovalReminded naming no action. An approval, a vote or a reminder
// about an action is not its to fold (ok false).
func planApprovalStep(t *stewardv1.Task, ev *stewardv1.Event) (commit func(), ok bool, err error) {
	switch p := ev.Payload.(type) {
	case *stewardv1.Event_ApprovalRequested:
		if p.ApprovalRequested.GetApproval().GetPlanHash() == "" {
			return nil, false, nil
		}
		commit, err = planApprovalRequest(t, ev)
	case *stewardv1.Event_ApprovalDecided:
		if p.ApprovalDecided.GetPlanHash() == "" {
			return nil, false, nil
		}
		commit, err = planVote(t, ev, p.ApprovalDecided)
	case *stewardv1.Event_ApprovalReminded:
		if p.ApprovalReminded.GetActionId() != "" {
			return nil, false, nil
		}
		commit, err = planReminder(t, p.ApprovalReminded)
	case *stewardv1.Event_ApprovalEscalated:
		if p.ApprovalEscalated.GetActionId() != "" {
			return nil, false, nil
		}
		commit, err = planEscalation(t, ev, p.ApprovalEscalated)
	default:
		return nil, false, nil
	}
	return commit, true, err
}

// planReminder checks a reminder that the approval of the plan version
// in force is still waiting; it changes nothing but the record.
func planReminder(t *stewardv1.Task, r *stewardv1.ApprovalReminded) (func(), error) {
	ap := t.Plan.GetApproval()
	if ap == nil || ap.ApprovalId != r.ApprovalId || ap.Decision != stewardv1.ApprovalDecision_APPROVAL_DECISION_UNSPECIFIED {
		return nil, errs.New(errs.FailedPrecondition, "task %s: approval %s is not the open approval of its plan", t.Contract.GetTaskId(), r.ApprovalId)
	}
	return func() {}, nil
}

// planEscalation notes that the approval of the plan version in force went
// to the contract's backup.
func planEscalation(t *stewardv1.Task, ev *stewardv1.Event, e *stewardv1.ApprovalEscalated) (func(), error) {
	ap := t.Plan.GetApproval()
	if ap == nil || ap.Decision != stewardv1.ApprovalDecision_APPROVAL_DECISION_UNSPECIFIED {
		return nil, errs.New(errs.FailedPrecondition, "task %s: approval %s is not the open approval of its plan", t.Contract.GetTaskId(), e.ApprovalId)
	}
	if err := checkEscalation(t, ap, e); err != nil {
		return nil, errs.New(errs.FailedPrecondition, "task %s: %v", t.Contract.GetTaskId(), err)
	}
	return func() {
		t.Plan = withPlan(t.Plan, func(p *stewardv1.PlanState) { p.Approval = escalated(p.Approval, e, ev) })
	}, nil
}

// planApprovalRequest opens the one approval of the version in force,
// when governance's judgement of it asks for one.
func planApprovalRequest(t *stewardv1.Task, ev *stewardv1.Event) (func(), error) {
	ap := ev.GetApprovalRequested().GetApproval()
	id, cur := t.Contract.GetTaskId(), t.Plan
	switch {
	case cur == nil:
		return nil, errs.New(errs.FailedPrecondition, "task %s has no plan", id)
	case ap.GetPlanVersion() != cur.Version || ap.GetPlanHash() != cur.PlanHash:
		return nil, errs.New(errs.FailedPrecondition, "approval %s is for plan version %d (%s), not task %s's plan in force, version %d (%s)",
			ap.GetApprovalId(), ap.GetPlanVersion(), errs.Quote(ap.GetPlanHash()), id, cur.Version, errs.Quote(cur.PlanHash))
	case ap.GetActionId() != "" || ap.GetActionHash() != "":
		return nil, errs.New(errs.FailedPrecondition, "approval %s names both a plan and an action", ap.GetApprovalId())
	case cur.Governance != stewardv1.PlanGovernance_PLAN_GOVERNANCE_AWAITING_APPROVAL:
		return nil, errs.New(errs.FailedPrecondition, "task %s: plan version %d is %s, not awaiting approval", id, cur.Version, PlanGovernanceName(cur.Governance))
	case cur.Approval != nil:
		return nil, errs.New(errs.FailedPrecondition, "task %s: plan version %d has an approval already (%s)", id, cur.Version, cur.Approval.GetApprovalId())
	}
	return func() {
		t.Plan = withPlan(cur, func(p *stewardv1.PlanState) { p.Approval = requested(ev) })
	}, nil
}

// planVote records one approver's vote on the approval of the version in
// force. A rejection decides the version: nothing of it runs.
func planVote(t *stewardv1.Task, ev *stewardv1.Event, d *stewardv1.ApprovalDecided) (func(), error) {
	id, cur := t.Contract.GetTaskId(), t.Plan
	ap := cur.GetApproval()
	switch {
	case ap == nil || ap.ApprovalId != d.ApprovalId:
		return nil, errs.New(errs.FailedPrecondition, "task %s: approval %s is not the open approval of its plan", id, d.ApprovalId)
	case d.PlanHash != ap.PlanHash || d.ActionId != "" || d.ActionHash != "":
		return nil, errs.New(errs.FailedPrecondition, "the decision is for plan hash %s, the approval's is %s", errs.Quote(d.PlanHash), ap.PlanHash)
	case ap.Decision != stewardv1.ApprovalDecision_APPROVAL_DECISION_UNSPECIFIED:
		return nil, errs.New(errs.FailedPrecondition, "approval %s was already decided", d.ApprovalId)
	case d.Decision != stewardv1.ApprovalDecision_APPROVAL_DECISION_APPROVE && d.Decision != stewardv1.ApprovalDecision_APPROVAL_DECISION_REJECT:
		return nil, errs.New(errs.FailedPrecondition, "decision %v is neither approve nor reject", d.Decision)
	case VoteOf(ap, d.DecidedBy) != nil:
		return nil, errs.New(errs.FailedPrecondition, "%s has voted on approval %s already; each approver votes once", d.DecidedBy, d.ApprovalId)
	}
	return func() {
		t.Plan = withPlan(cur, func(p *stewardv1.PlanState) {
			p.Approval = proto.CloneOf(ap)
			if CastVote(p.Approval, d, ev.Time) && d.Decision == stewardv1.ApprovalDecision_APPROVAL_DECISION_REJECT {
				p.Governance = stewardv1.PlanGovernance_PLAN_GOVERNANCE_REJECTED
			}
		})
		followLedger(t) // a rejected plan has nothing left to run
	}, nil
}

// approvedJudgement checks governance's judgement e of the version in
// force made after its approval, and returns where it leaves the plan:
// approved, unless policy now denies it (next, from e's decision). It
// must come while the version awaits that judgement, and name the
// version's approval, approved.
func approvedJudgement(t *stewardv1.Task, ev *stewardv1.Event, e *stewardv1.PlanEvaluated, next stewardv1.PlanGovernance) (stewardv1.PlanGovernance, error) {
	id, cur := t.Contract.GetTaskId(), t.Plan
	switch ap := cur.GetApproval(); {
	case cur.Governance != stewardv1.PlanGovernance_PLAN_GOVERNANCE_AWAITING_APPROVAL:
		return 0, errs.New(errs.FailedPrecondition, "%s: task %s: plan version %d is %s, not awaiting approval", ev.Type, id, cur.Version, PlanGovernanceName(cur.Governance))
	case ap.GetApprovalId() != e.ApprovalId || ap.GetDecision() != stewardv1.ApprovalDecision_APPROVAL_DECISION_APPROVE:
		return 0, errs.New(errs.FailedPrecondition, "%s: task %s: approval %s is not the approved approval of plan version %d", ev.Type, id, e.ApprovalId, cur.Version)
	case next == stewardv1.PlanGovernance_PLAN_GOVERNANCE_DENIED:
		return next, nil
	}
	return stewardv1.PlanGovernance_PLAN_GOVERNANCE_APPROVED, nil
}

// PlanStopped reports whether governance stopped p for good: denied or
// rejected. Nothing of it runs; a new version is judged afresh.
func PlanStopped(p *stewardv1.PlanState) bool {
	switch p.GetGovernance() {
	case stewardv1.PlanGovernance_PLAN_GOVERNANCE_DENIED, stewardv1.PlanGovernance_PLAN_GOVERNANCE_REJECTED:
		return true
	}
	return false
}
