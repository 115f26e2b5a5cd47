package task

import (
	"google.golang.org/protobuf/proto"

	"github.com/steward-run/steward/pkg/errs"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// Plan policy: governance judges each plan version as a whole
// (PlanEvaluated) and may ask for an approval of it, bound to the
// version's hash. The fold keeps that judgement of the latest version in
// Task.plan_policy; a new version starts it afresh, so the previous
// version's approval is closed and no vote on it counts for the new one.
// docs/plans.md ("Plan policy") says when a plan may start.

// planPolicyStep folds the events that make up a plan's judgement: a
// submitted version, its evaluations, and the approval of the whole plan
// with its votes. An approval or a vote about an action is not its to
// fold (ok false).
func planPolicyStep(t *stewardv1.Task, ev *stewardv1.Event) (commit func(), ok bool, err error) {
	switch p := ev.Payload.(type) {
	case *stewardv1.Event_PlanSubmitted:
		commit, err = planSubmitted(t, ev, p.PlanSubmitted)
	case *stewardv1.Event_PlanEvaluated:
		commit, err = planEvaluated(t, p.PlanEvaluated)
	case *stewardv1.Event_ApprovalRequested:
		if p.ApprovalRequested.GetApproval().GetPlanHash() == "" {
			return nil, false, nil
		}
		commit, err = planApprovalRequested(t, p.ApprovalRequested.GetApproval())
	case *stewardv1.Event_ApprovalDecided:
		if p.ApprovalDecided.GetPlanHash() == "" {
			return nil, false, nil
		}
		commit, err = planVote(t, ev, p.ApprovalDecided)
	default:
		return nil, false, nil
	}
	return commit, true, err
}

// planSubmitted starts the judgement of a new plan version. (What the
// plan itself becomes in the task is the plan state's to fold.)
func planSubmitted(t *stewardv1.Task, ev *stewardv1.Event, s *stewardv1.PlanSubmitted) (func(), error) {
	v := s.GetPlan().GetVersion()
	switch {
	case s.GetPlanHash() == "":
		return nil, errs.New(errs.FailedPrecondition, "task %s: plan version %d has no hash", t.Contract.GetTaskId(), v)
	case t.PlanPolicy != nil && v <= t.PlanPolicy.Version:
		return nil, errs.New(errs.FailedPrecondition, "task %s: plan version %d does not follow version %d", t.Contract.GetTaskId(), v, t.PlanPolicy.Version)
	}
	return func() {
		t.PlanPolicy = &stewardv1.PlanPolicy{Version: v, PlanHash: s.PlanHash, SubmittedBy: ev.GetActor().GetPrincipal()}
	}, nil
}

// currentPlan checks that version and hash name the task's latest plan
// version, and returns its judgement so far.
func currentPlan(t *stewardv1.Task, version uint32, hash string) (*stewardv1.PlanPolicy, error) {
	pp := t.PlanPolicy
	switch {
	case pp == nil:
		return nil, errs.New(errs.FailedPrecondition, "task %s has no plan", t.Contract.GetTaskId())
	case version != pp.Version || hash != pp.PlanHash:
		return nil, errs.New(errs.FailedPrecondition, "task %s: plan version %d with hash %s is not its latest (version %d, hash %s)",
			t.Contract.GetTaskId(), version, hash, pp.Version, pp.PlanHash)
	}
	return pp, nil
}

// planEvaluated records governance's evaluation of the latest version.
// A version is evaluated at most twice: once when submitted, and, if that
// asked for an approval, once more after the approval was given — that
// evaluation names it. So no later evaluation can overturn a deny.
func planEvaluated(t *stewardv1.Task, e *stewardv1.PlanEvaluated) (func(), error) {
	pp, err := currentPlan(t, e.GetVersion(), e.GetPlanHash())
	if err != nil {
		return nil, err
	}
	taskID := t.Contract.GetTaskId()
	switch ap := pp.Approval; {
	case e.GetSnapshot() == nil:
		return nil, errs.New(errs.FailedPrecondition, "task %s: the evaluation of plan version %d has no snapshot", taskID, e.Version)
	case e.ApprovalId == "" && pp.Snapshot != nil:
		return nil, errs.New(errs.FailedPrecondition, "task %s: plan version %d was evaluated already (%s)", taskID, e.Version, pp.Snapshot.GetSnapshotId())
	case e.ApprovalId == "":
	case pp.Snapshot.GetDecision() != stewardv1.PolicyDecision_POLICY_DECISION_REQUIRE_APPROVAL || pp.VerifiedApprovalId != "":
		return nil, errs.New(errs.FailedPrecondition, "task %s: plan version %d awaits no approval", taskID, e.Version)
	case ap.GetApprovalId() != e.ApprovalId || ap.GetDecision() != stewardv1.ApprovalDecision_APPROVAL_DECISION_APPROVE:
		return nil, errs.New(errs.FailedPrecondition, "task %s: approval %s is not the approved approval of plan version %d", taskID, e.ApprovalId, e.Version)
	}
	return func() {
		pp := proto.CloneOf(pp)
		pp.Snapshot, pp.VerifiedApprovalId = proto.CloneOf(e.Snapshot), e.ApprovalId
		t.PlanPolicy = pp
	}, nil
}

// planApprovalRequested opens the one approval of the latest version,
// when its evaluation asks for one.
func planApprovalRequested(t *stewardv1.Task, ap *stewardv1.Approval) (func(), error) {
	pp, err := currentPlan(t, ap.GetPlanVersion(), ap.GetPlanHash())
	if err != nil {
		return nil, err
	}
	switch {
	case ap.GetActionId() != "" || ap.GetActionHash() != "":
		return nil, errs.New(errs.FailedPrecondition, "approval %s names both a plan and an action", ap.GetApprovalId())
	case pp.Snapshot.GetDecision() != stewardv1.PolicyDecision_POLICY_DECISION_REQUIRE_APPROVAL:
		return nil, errs.New(errs.FailedPrecondition, "task %s: policy asks no approval of plan version %d", t.Contract.GetTaskId(), pp.Version)
	case pp.Approval != nil:
		return nil, errs.New(errs.FailedPrecondition, "task %s: plan version %d has an approval already (%s)", t.Contract.GetTaskId(), pp.Version, pp.Approval.GetApprovalId())
	}
	return func() {
		pp := proto.CloneOf(pp)
		pp.Approval = proto.CloneOf(ap)
		t.PlanPolicy = pp
	}, nil
}

// planVote records one approver's vote on the latest version's approval.
func planVote(t *stewardv1.Task, ev *stewardv1.Event, d *stewardv1.ApprovalDecided) (func(), error) {
	ap := t.PlanPolicy.GetApproval()
	switch {
	case ap == nil || ap.ApprovalId != d.ApprovalId:
		return nil, errs.New(errs.FailedPrecondition, "task %s: approval %s is not the open approval of its plan", t.Contract.GetTaskId(), d.ApprovalId)
	case d.PlanHash != ap.PlanHash || d.ActionId != "" || d.ActionHash != "":
		return nil, errs.New(errs.FailedPrecondition, "the decision is for plan hash %s, the approval's is %s", d.PlanHash, ap.PlanHash)
	case ap.Decision != stewardv1.ApprovalDecision_APPROVAL_DECISION_UNSPECIFIED:
		return nil, errs.New(errs.FailedPrecondition, "approval %s was already decided", d.ApprovalId)
	case d.Decision != stewardv1.ApprovalDecision_APPROVAL_DECISION_APPROVE && d.Decision != stewardv1.ApprovalDecision_APPROVAL_DECISION_REJECT:
		return nil, errs.New(errs.FailedPrecondition, "decision %v is neither approve nor reject", d.Decision)
	case VoteOf(ap, d.DecidedBy) != nil:
		return nil, errs.New(errs.FailedPrecondition, "%s has voted on approval %s already; each approver votes once", d.DecidedBy, d.ApprovalId)
	}
	return func() {
		pp := proto.CloneOf(t.PlanPolicy)
		CastVote(pp.Approval, d, ev.Time)
		t.PlanPolicy = pp
	}, nil
}

// PlanMayStart reports whether t's latest plan version may start:
// governance's evaluation of it allows it, or, recorded after the
// version's approval (naming it: governance verified its votes), does not
// deny it.
func PlanMayStart(t *stewardv1.Task) bool {
	pp := t.GetPlanPolicy()
	switch d := pp.GetSnapshot().GetDecision(); {
	case pp.GetVerifiedApprovalId() == "":
		return d == stewardv1.PolicyDecision_POLICY_DECISION_ALLOW
	default:
		return d != stewardv1.PolicyDecision_POLICY_DECISION_DENY && pp.VerifiedApprovalId == pp.Approval.GetApprovalId() &&
			pp.Approval.GetDecision() == stewardv1.ApprovalDecision_APPROVAL_DECISION_APPROVE
	}
}

// PlanRefused says why t's latest plan version will never start, or ""
// if it may yet: policy denied it, or a person rejected it. A revision is
// judged afresh.
func PlanRefused(t *stewardv1.Task) string {
	pp := t.GetPlanPolicy()
	switch {
	case pp.GetSnapshot().GetDecision() == stewardv1.PolicyDecision_POLICY_DECISION_DENY:
		return "policy denied the plan: " + joinReasons(pp.Snapshot.GetReasons())
	case pp.GetApproval().GetDecision() == stewardv1.ApprovalDecision_APPROVAL_DECISION_REJECT:
		return "the plan was rejected by " + pp.Approval.DecidedBy + orEmpty(": ", pp.Approval.Comment)
	}
	return ""
}
