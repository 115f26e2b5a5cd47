package control

import (
	"context"

	"google.golang.org/protobuf/proto"

	"github.com/steward-run/steward/pkg/action"
	"github.com/steward-run/steward/pkg/errs"
	"github.com/steward-run/steward/pkg/eventlog"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/task"
)

// amendDue proposes the actions approvers' amendments ask for
// (APPROVAL_DECISION_AMEND, docs/approvals.md): governance records the
// decision, the fold rejects the action naming the one that replaces it
// (amended_as), and this proposes that one — the same tool version, target,
// retry policy, milestone, decision and rationale, the approver's
// parameters, in the approver's name, with amendment_of pointing back. It
// is governed like any proposal: policy judges it afresh, and governance
// never counts its proposer's approval (nor the original's proposers').
//
// It reacts to a decision, and to a task that runs again (a resume, an
// answer): an amendment decided while the task was stopped is proposed
// when it runs. Idempotent: the action's id derives from the approval and
// the parameters (action.AmendmentID), so however often a decision is
// made or read, one action is proposed.
func (r *recovery) amendDue(ctx context.Context, rec *stewardv1.EventRecord) error {
	if d := rec.Event.GetApprovalDecided(); d != nil && d.Decision != stewardv1.ApprovalDecision_APPROVAL_DECISION_AMEND {
		return nil // only an amendment proposes; no need to read the task
	}
	t, _, err := r.tasks.LoadSince(ctx, rec.Event.TaskId, rec.Sequence)
	if err != nil || !task.Active(t.Status) {
		return err
	}
	for _, a := range t.Actions {
		if task.AmendmentOwed(t, a) {
			if err := r.amend(ctx, rec, t, a); err != nil {
				return err
			}
		}
	}
	return nil
}

// amend proposes the action orig, an action of t, was amended into. One
// that can no longer be proposed — its tool version unusable, the task at
// its action cap — is logged and left: the original's outcome names the
// amendment, and the agent decides.
func (r *recovery) amend(ctx context.Context, rec *stewardv1.EventRecord, t *stewardv1.Task, orig *stewardv1.Action) error {
	taskID, ap := t.Contract.GetTaskId(), orig.Approval
	d, err := r.plane.prepare(ctx, t, proposal{
		taskID: taskID, proposalID: action.AmendmentID(ap.GetApprovalId(), []byte(ap.GetAmendedParamsJson())),
		tool: orig.Tool, toolVersion: orig.ToolVersion, target: orig.Target,
		params: []byte(ap.GetAmendedParamsJson()), retry: orig.RetryPolicy, principal: ap.GetDecidedBy(),
		rationale: orig.Rationale, milestone: orig.MilestoneId, decision: orig.DecisionId,
	})
	if err == nil && d.action.ActionId != orig.AmendedAs {
		err = errs.New(errs.FailedPrecondition, "the amendment of action %s comes out as action %s, not %s", orig.ActionId, d.action.ActionId, orig.AmendedAs)
	}
	if err == nil {
		d.action.AmendmentOf = orig.ActionId
		d.action.Rationale = proto.CloneOf(orig.Rationale)
		_, _, _, err = r.plane.record(ctx, taskID, d, rec.Event.EventId, func(t *stewardv1.Task) (bool, error) {
			// Only while the task runs: a stop since it was read leaves
			// the amendment to the task's next run.
			return task.Active(t.Status), nil
		})
	}
	if err != nil && eventlog.Permanent(err) {
		r.logger.WarnContext(ctx, "amended action not proposed", "task", taskID, "action", orig.ActionId, "amended_as", orig.AmendedAs, "err", err)
		return nil
	}
	return err
}
