package governance

import (
	"context"
	"strings"

	"github.com/steward-run/steward/pkg/credential"
	"github.com/steward-run/steward/pkg/errs"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/task"
)

// revalidationRound names the evaluation round of a revalidation: one per
// permit that was not used and bundle revision, so that a snapshot
// recorded before a crash is not acted on under a bundle replaced since.
func revalidationRound(oldPermit, revision string) string {
	return revalidationPrefix + oldPermit + "@" + revision
}

const revalidationPrefix = "revalidate-"

// permitOfRound is the permit a revalidation round was opened for.
func permitOfRound(round string) string {
	// A permit id has no @; a bundle revision may.
	permit, _, _ := strings.Cut(strings.TrimPrefix(round, revalidationPrefix), "@")
	return permit
}

// revalidate reacts to an action whose permit will not be used as it is (a
// resume, a retry, the re-dispatch after "not accepted", an expired
// permit), as decide does to a proposal: a new policy snapshot under the
// bundle in force now, then the credential chain and the budget, then the
// snapshot's decision. An allow gets a new permit (recorded with the
// snapshot, in one event, when the credential and the budget let it:
// evaluate); an approval asked for again gets one if the approval already
// given was asked of the same roles, and otherwise a new approval; a deny,
// a revoked or expired credential or a spent budget deny the action,
// charged for the calls it made. Every id is keyed by the old permit, so
// a redelivery records nothing twice, and each step runs only if the
// ledger says it has not.
func (p *Plane) revalidate(ctx context.Context, rec *stewardv1.EventRecord, r *stewardv1.ActionRevalidating) error {
	taskID := rec.Event.TaskId
	round := revalidationRound(r.PermitId, p.engine.Revision())
	t, err := p.evaluate(ctx, judging{taskID: taskID, actionID: r.ActionId, round: round, from: stewardv1.ActionStatus_ACTION_STATUS_REVALIDATING, rec: rec})
	if errs.Is(err, errs.Corrupt) || errs.Is(err, errs.NotFound) {
		// The action cannot be judged any more (its stored request or its
		// tool is gone): say so rather than leave it revalidating.
		t, _, lerr := p.tasks.Load(ctx, taskID)
		if lerr != nil {
			return lerr
		}
		if a := task.FindAction(t, r.ActionId); revalidating(a, r.PermitId) {
			return p.deny(ctx, taskID, a, []string{"the action cannot be evaluated again: " + err.Error()}, rec.Event)
		}
		return nil
	}
	if err != nil {
		return err
	}
	a := task.FindAction(t, r.ActionId)
	if !revalidating(a, r.PermitId) {
		return nil // decided before
	}
	if a.Snapshot.GetSnapshotId() != snapshotID(a.ActionId, round) {
		return errs.New(errs.Unavailable, "action %s: the revalidation's snapshot is not on the log yet", a.ActionId)
	}
	t, why, err := p.refuseEarly(ctx, t, a.ActionId, rec.Event)
	if errs.Is(err, errs.Corrupt) {
		why, err = "the task's credential cannot be checked: "+err.Error(), nil
	}
	if err != nil {
		return err
	}
	if why != "" {
		return p.deny(ctx, taskID, a, []string{why}, rec.Event)
	}
	switch a.Snapshot.GetDecision() {
	case stewardv1.PolicyDecision_POLICY_DECISION_ALLOW:
		return p.permit(ctx, t, a, rec.Event)
	case stewardv1.PolicyDecision_POLICY_DECISION_REQUIRE_APPROVAL:
		if approvalCounts(a) && p.votesHold(taskID, a.Approval) && p.permitHolds(taskID, a) {
			// Approvals already recorded that satisfy the roles now
			// required still count.
			return p.permit(ctx, t, a, rec.Event)
		}
		return p.requestApproval(ctx, t, a, rec.Event)
	default:
		return p.deny(ctx, taskID, a, a.Snapshot.GetReasons(), rec.Event)
	}
}

// revalidating reports whether a is still being revalidated for the
// permit oldPermit.
func revalidating(a *stewardv1.Action, oldPermit string) bool {
	return a.GetStatus() == stewardv1.ActionStatus_ACTION_STATUS_REVALIDATING && a.Permit.GetPermitId() == oldPermit
}

// approvalCounts reports whether a's recorded approval satisfies what its
// fresh snapshot asks for: it was given, asked of the roles now required
// (policy naming none asks the default role), and of at least as many
// approvers.
func approvalCounts(a *stewardv1.Action) bool {
	roles := a.Snapshot.GetRequiredApproverRoles()
	if len(roles) == 0 {
		roles = []string{DefaultApproverRole}
	}
	return a.Approval.GetDecision() == stewardv1.ApprovalDecision_APPROVAL_DECISION_APPROVE &&
		!a.Approval.GetWithdrawn() && task.SameRoles(roles, a.Approval.GetRequiredRoles()) && task.EnoughApprovals(a.Snapshot, a.Approval)
}

// permitHolds reports whether the permit a revalidation replaces is one
// this plane signed for a: only then did the approval a holds pass
// afterDecision's checks (its id, every vote, the roles and the number
// of approvers policy asked), so that it may count again. A permit
// appended by another hand — unsigned and expired, which execution sends
// back here — may follow an approval opened by another hand too; that
// approval is asked for again.
func (p *Plane) permitHolds(taskID string, a *stewardv1.Action) bool {
	if p.signer == nil {
		return true
	}
	if _, err := credential.VerifyPermit(a.Permit, a.SignedPermit, a.ActionId, a.ActionHash, p.credentials.trustedKeys()...); err != nil {
		p.logger.Warn("the approval is asked for again: the permit revalidated does not hold: "+err.Error(), "task", taskID, "action", a.ActionId)
		return false
	}
	return true
}
