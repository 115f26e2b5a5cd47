package governance

import (
	"context"

	"google.golang.org/protobuf/proto"

	"github.com/steward-run/steward/pkg/credential"
	"github.com/steward-run/steward/pkg/errs"
	"github.com/steward-run/steward/pkg/event"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/rpc"
	"github.com/steward-run/steward/pkg/task"
)

// decidePlan records who's vote on known, the approval of a plan
// version, as Decide does for an action's: the caller names the plan
// hash they saw, and an approval closed by a revision takes no vote.
func (p *Plane) decidePlan(ctx context.Context, who rpc.Identity, req *stewardv1.DecideApprovalRequest, known *stewardv1.Approval) (*stewardv1.Approval, error) {
	if req.PlanHash == "" {
		return nil, errs.Field("plan_hash", "is required: approval %s is for version %d of the task's plan; name the hash of the plan you decide on", req.ApprovalId, known.PlanVersion)
	}
	err := p.tasks.Write(ctx, known.TaskId, func(t *stewardv1.Task) (*stewardv1.Event, error) {
		if t.Tenant != who.Tenant {
			return nil, approvalNotFound(req.ApprovalId)
		}
		ps := t.Plan
		ap := ps.GetApproval()
		switch {
		case task.Terminal(t.Status):
			return nil, errs.New(errs.FailedPrecondition, "approval %s is closed: task %s is %s", req.ApprovalId, t.Contract.GetTaskId(), task.StatusName(t.Status))
		case ap.GetApprovalId() != req.ApprovalId:
			return nil, errs.New(errs.FailedPrecondition, "approval %s is closed: the plan was revised (version %d is in force), and a revision needs an approval of its own", req.ApprovalId, ps.GetVersion())
		case ap.Decision != stewardv1.ApprovalDecision_APPROVAL_DECISION_UNSPECIFIED:
			return nil, errs.New(errs.FailedPrecondition, "approval %s was already decided (%s by %s)", req.ApprovalId, decisionWord(ap.Decision), ap.DecidedBy)
		}
		// Who may vote first, as for an action's approval (Decide).
		subject := voteSubject{what: "the plan", by: []stake{{ps.SubmittedBy, "submitted the plan"}}}
		asBackup, err := mayVoteOn(t, ap, subject, who, req.Decision, p.now())
		if err != nil {
			return nil, err
		}
		if req.PlanHash != ap.PlanHash {
			return nil, errs.Field("plan_hash", "%s is not the hash of the plan this approval is for (%s); an approval binds to one plan version", errs.Quote(req.PlanHash), ap.PlanHash)
		}
		// Signed over the plan hash too.
		return p.vote(t, who, event.ID(req.ApprovalId, event.TypeApprovalDecided, who.Principal, req.Decision.String()),
			&stewardv1.ApprovalDecided{ApprovalId: req.ApprovalId, PlanHash: req.PlanHash, Decision: req.Decision, DecidedBy: who.Principal, Comment: req.Comment,
				AsBackup: asBackup})
	})
	if err != nil {
		return nil, err
	}
	return p.approvals.Fresh(ctx, p.log, req.ApprovalId)
}

// afterPlanDecision reacts to the vote that approved a plan version. As
// before a permit, nothing is taken on trust: every vote that counts must
// be signed by this plane, the approval must be the one governance opens
// for the version (its id, proposer, roles and count), and policy is
// evaluated again. Then the plan's evaluation is recorded anew, naming
// the approval: that is what approves it (task.PlanRuns). If
// policy changed meanwhile (a deny, other roles, more approvers), that
// evaluation denies the version, which must be submitted again.
// Anything that does not hold is logged and nothing is recorded: the plan
// does not start.
func (p *Plane) afterPlanDecision(ctx context.Context, rec *stewardv1.EventRecord, d *stewardv1.ApprovalDecided) error {
	taskID := rec.Event.TaskId
	t, _, err := p.tasks.LoadSince(ctx, taskID, rec.Sequence)
	if err != nil {
		return err
	}
	ps := t.Plan
	ap := ps.GetApproval()
	asked := planSnapshotID(taskID, ps.GetVersion(), ps.GetPlanHash(), roundProposal)
	if ps.GetGovernance() != stewardv1.PlanGovernance_PLAN_GOVERNANCE_AWAITING_APPROVAL || ap.GetApprovalId() != d.ApprovalId ||
		ap.Decision != stewardv1.ApprovalDecision_APPROVAL_DECISION_APPROVE || ps.Snapshot.GetSnapshotId() != asked {
		// Revised since; short of its approvals; judged after the
		// approval already (a redelivery); or not judged by governance.
		return nil
	}
	want := p.planApprovalFor(t)
	if ap.ApprovalId != want.ApprovalId || ap.RequestedBy != want.RequestedBy || ap.PlanVersion != want.PlanVersion ||
		!task.SameRoles(ap.RequiredRoles, want.RequiredRoles) || task.RequiredApprovals(ap) != task.RequiredApprovals(want) {
		// An approval request may be unsigned (unsignedFromBefore): one
		// appended ahead of governance's could ask other roles, fewer
		// people, or let the submitter approve their own plan.
		p.logger.Error("plan approval refused, the plan does not start: approval "+ap.ApprovalId+" is not the one governance opens for version "+want.ApprovalId,
			"task", taskID, "plan_version", ps.Version)
		return nil
	}
	if p.signer != nil {
		if err := credential.VerifyDecision(d, p.credentials.trustedKeys()...); err != nil {
			p.logger.Error("approval decision refused, the plan does not start: "+err.Error(), "task", taskID, "approval", d.ApprovalId, "decided_by", d.DecidedBy)
			return nil
		}
	}
	if !p.votesHold(taskID, ap) {
		return nil
	}
	fresh, err := p.planSnapshot(ctx, t, roundApproved)
	if err != nil {
		return err
	}
	if why := task.ChangedSinceApproval(withDefaultRole(fresh), ap, p.engine.Revision(), "the plan"); why != "" {
		fresh.Decision = stewardv1.PolicyDecision_POLICY_DECISION_DENY
		fresh.Reasons = append([]string{task.PlanChangedReason(why)}, fresh.Reasons...)
	}
	_, err = p.tasks.UpdateFrom(ctx, t, func(t *stewardv1.Task) (*stewardv1.Event, error) {
		cur := t.Plan
		if cur.GetPlanHash() != ps.PlanHash || cur.GetVersion() != ps.Version || cur.GetGovernance() != ps.Governance || !proto.Equal(cur.Approval, ap) {
			return nil, nil
		}
		pe, err := signed(p, &stewardv1.PlanEvaluated{Version: ps.Version, PlanHash: ps.PlanHash, Snapshot: fresh, ApprovalId: ap.ApprovalId})
		if err != nil {
			return nil, err
		}
		return event.New(p.meta(taskID, planEventID(taskID, ps.Version, ps.PlanHash, event.TypePlanEvaluated, ap.ApprovalId), rec.Event), pe)
	})
	return err
}

// withDefaultRole is snap as the approval it asks for reads it: with
// DefaultApproverRole when it names no role.
func withDefaultRole(snap *stewardv1.PolicySnapshot) *stewardv1.PolicySnapshot {
	if len(snap.RequiredApproverRoles) > 0 || snap.Decision != stewardv1.PolicyDecision_POLICY_DECISION_REQUIRE_APPROVAL {
		return snap
	}
	snap = proto.CloneOf(snap)
	snap.RequiredApproverRoles = []string{DefaultApproverRole}
	return snap
}
