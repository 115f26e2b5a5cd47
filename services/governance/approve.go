package governance

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"

	"github.com/steward-run/steward/pkg/credential"
	"github.com/steward-run/steward/pkg/errs"
	"github.com/steward-run/steward/pkg/event"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/rpc"
	"github.com/steward-run/steward/pkg/task"
	"google.golang.org/protobuf/proto"
)

// Decide records a person's vote on an approval. The caller must be one
// who may vote (mayVote: the role, once each, and for an approval no stake
// in the action), and must name the action hash they saw: a decision for
// any other hash is refused, so an approval never stretches to a different
// action. The approval is decided by the vote that completes it (the
// required number of distinct approvals) or by a rejection; until then the
// action waits, and Decide returns the approval with the votes so far. An
// amendment decides it as a rejection does, and an answer that a person
// executes the action as the approval that completes it (amend.go); either,
// repeated by the one who gave it, is answered with the approval.
func (p *Plane) Decide(ctx context.Context, who rpc.Identity, req *stewardv1.DecideApprovalRequest) (*stewardv1.Approval, error) {
	if err := checkDecision(req); err != nil {
		return nil, err
	}
	known, err := p.approvals.Fresh(ctx, p.log, req.ApprovalId)
	if err != nil {
		return nil, err
	}
	// Another tenant's approval is not found, whichever hash the caller
	// names: the refusals below would tell its kind, a plan's version or
	// an action's id. (A copy: what shown blanks is not decided on.)
	if mine, err := p.shown(ctx, who, []*stewardv1.Approval{proto.CloneOf(known)}); err != nil || len(mine) == 0 {
		return nil, cmp.Or(err, approvalNotFound(req.ApprovalId))
	}
	if known.PlanHash != "" {
		if !yesOrNo(req.Decision) {
			return nil, errs.Field("decision", "approval %s is of a plan, which is approved or rejected: its submitter revises it", req.ApprovalId)
		}
		return p.decidePlan(ctx, who, req, known)
	}
	if req.ActionHash == "" {
		return nil, errs.Field("action_hash", "is required: approval %s is for action %s; name the hash of the action you decide on", req.ApprovalId, known.ActionId)
	}
	// An amendment is built here (it reads the tool registry) and its
	// refusal kept for after the caller is known to be an approver of the
	// hash: told sooner, anyone could try guesses at the parameters.
	var am *amendment
	var amendErr error
	if req.Decision == stewardv1.ApprovalDecision_APPROVAL_DECISION_AMEND {
		am, amendErr = p.amendmentOf(ctx, who.Tenant, known, req)
	}
	var decided *stewardv1.Approval
	wctx, end := p.approvals.approvalTrace(ctx, p.log.Tracer(), known.ApprovalId)
	err = p.tasks.Write(wctx, known.TaskId, func(t *stewardv1.Task) (*stewardv1.Event, error) {
		a := task.FindAction(t, known.ActionId)
		if a == nil || a.Approval.GetApprovalId() != req.ApprovalId || t.Tenant != who.Tenant {
			return nil, approvalNotFound(req.ApprovalId)
		}
		ap := a.Approval
		decided = proto.CloneOf(ap) // the build's task is not ours to keep
		switch {
		case ap.Withdrawn:
			return nil, errs.New(errs.FailedPrecondition, "approval %s is closed: its action was withdrawn (%s)", req.ApprovalId, a.Outcome.GetReason())
		case a.Status != stewardv1.ActionStatus_ACTION_STATUS_AWAITING_APPROVAL && repeated(ap, who, req, am):
			return nil, nil // a retry of the decision that decided it: nothing more
		case a.Status != stewardv1.ActionStatus_ACTION_STATUS_AWAITING_APPROVAL:
			return nil, errs.New(errs.FailedPrecondition, "approval %s was already decided (%s by %s)", req.ApprovalId, decisionWord(ap.Decision), ap.DecidedBy)
		}
		// Who may vote first: only they may read the action hash the
		// refusal below quotes (content.Blind), and to anyone else it
		// would be a plain SHA-256 of a request that may quote a result.
		asBackup, err := mayVote(t, a, who, req.Decision, p.now())
		if err != nil {
			return nil, err
		}
		if req.ActionHash != a.ActionHash {
			return nil, errs.Field("action_hash", "%s is not the hash of the action this approval is for (%s); an approval binds to one action", errs.Quote(req.ActionHash), a.ActionHash)
		}
		if err := checkAnswer(t, a, req.Decision); err != nil {
			return nil, err
		}
		if amendErr != nil {
			return nil, amendErr
		}
		return p.vote(t, who, decisionEventID(a, who, req.Decision, am), voteOf(a, who, req, am, asBackup))
	})
	end(err)
	if err != nil {
		return nil, err
	}
	return p.approvals.Fresh(ctx, p.log, decided.ApprovalId)
}

// decisionEventID is the id of who's vote decision on a's open approval,
// with am for an amendment: it names who decided what, so a redelivery
// appends nothing.
func decisionEventID(a *stewardv1.Action, who rpc.Identity, decision stewardv1.ApprovalDecision, am *amendment) string {
	parts := []string{a.ActionId, event.TypeApprovalDecided, who.Principal, decision.String()}
	if a.Approval.ApprovalId != approvalID(a.ActionId, "") {
		// A revalidation's approval: its decision is not the first's.
		parts = append(parts, a.Approval.ApprovalId)
	}
	if am != nil {
		parts = append(parts, am.actionID)
	}
	return event.ID(parts...)
}

// voteOf is who's vote req on a's open approval, with am for an
// amendment.
func voteOf(a *stewardv1.Action, who rpc.Identity, req *stewardv1.DecideApprovalRequest, am *amendment, asBackup bool) *stewardv1.ApprovalDecided {
	d := &stewardv1.ApprovalDecided{
		ApprovalId: req.ApprovalId, ActionId: a.ActionId, ActionHash: req.ActionHash,
		Decision: req.Decision, DecidedBy: who.Principal, Comment: req.Comment, AsBackup: asBackup,
	}
	if am != nil {
		d.AmendedParamsJson, d.AmendedActionId = string(am.params), am.actionID
	}
	return d
}

// yesOrNo reports whether d is a plain approve or reject.
func yesOrNo(d stewardv1.ApprovalDecision) bool {
	return d == stewardv1.ApprovalDecision_APPROVAL_DECISION_APPROVE || d == stewardv1.ApprovalDecision_APPROVAL_DECISION_REJECT
}

// vote is the event that records who's vote d on a task t, under the
// event id id: the id names who decided what, so a redelivery appends
// nothing; a caller repeating a vote is refused before this (mayVote:
// AlreadyExists), a retry after a lost answer included.
func (p *Plane) vote(t *stewardv1.Task, who rpc.Identity, id string, d *stewardv1.ApprovalDecided) (*stewardv1.Event, error) {
	if p.signer != nil {
		// Signed, so that an audit can tell a decision governance
		// recorded from one appended by another hand.
		signed, err := p.signer.SignDecision(d)
		if err != nil {
			return nil, err
		}
		d.Signed = signed
	}
	return event.New(event.Meta{
		ID:     id,
		TaskID: t.Contract.TaskId,
		Actor:  &stewardv1.Actor{Principal: who.Principal, Plane: PlaneName},
		Time:   p.now(),
	}, d)
}

// afterDecision reacts to an approval: policy is evaluated again and the
// task's state checked. A permit follows only if the fresh snapshot, taken
// under the bundle in force now, still asks for the approval that was
// given (or now allows the action outright) and the task is live. If policy
// now denies, or asks for other roles than the approver was checked
// against, the action is denied and must be proposed again. A rejection
// needs nothing more.
func (p *Plane) afterDecision(ctx context.Context, rec *stewardv1.EventRecord, d *stewardv1.ApprovalDecided) error {
	if d.Decision != stewardv1.ApprovalDecision_APPROVAL_DECISION_APPROVE {
		return nil
	}
	if d.PlanHash != "" {
		return p.afterPlanDecision(ctx, rec, d)
	}
	taskID := rec.Event.TaskId
	if p.signer != nil {
		// Only decisions this plane recorded (Decide signs them) lead to
		// a permit: one appended to the log by another hand, or unsigned
		// (upcast.go lists why one may be), is logged and goes no
		// further; its action stays approved, without a permit. This is
		// the vote at hand; votesHold checks every vote that counts.
		if err := credential.VerifyDecision(d, p.credentials.trustedKeys()...); err != nil {
			p.logger.Error("approval decision refused, no permit follows: "+err.Error(), "task", taskID, "action", d.ActionId, "approval", d.ApprovalId, "decided_by", d.DecidedBy)
			return nil
		}
	}
	// Each approval has its own round: a revalidation may ask for a second
	// one, and its fresh snapshot must not be taken for the first's.
	round := roundApproved
	if d.ApprovalId != approvalID(d.ActionId, "") {
		round = roundApproved + "-" + d.ApprovalId
	}
	// The snapshot is recorded alone: it is weighed against the approval
	// (task.ChangedSinceApproval) before any permit.
	t, err := p.evaluate(ctx, judging{taskID: taskID, actionID: d.ActionId, round: round, from: stewardv1.ActionStatus_ACTION_STATUS_APPROVED, rec: rec})
	if err != nil {
		return err
	}
	a := task.FindAction(t, d.ActionId)
	if a.GetStatus() != stewardv1.ActionStatus_ACTION_STATUS_APPROVED || a.Approval.GetApprovalId() != d.ApprovalId {
		// Permitted or denied before; or a vote that left the approval
		// short of its approvals (still awaiting): the vote that
		// completes it goes on, and any vote's reaction that finds it
		// completed derives the same ids.
		return nil
	}
	if a.Snapshot.GetSnapshotId() != snapshotID(a.ActionId, round) {
		return fmt.Errorf("action %s: the fresh snapshot is not on the log yet", a.ActionId)
	}
	if want := approvalID(a.ActionId, a.Permit.GetPermitId()); a.Approval.GetApprovalId() != want {
		// Votes are signed for an approval id, not for the roles or the
		// number of approvers they were checked against: an approval
		// opened under an id already used (by another hand: governance
		// keys each by the permit it follows) could count old, genuine
		// votes towards what policy asks now.
		p.logger.Error("approval refused, no permit follows: approval "+a.Approval.GetApprovalId()+" is not the one this round asks ("+want+")", "task", taskID, "action", a.ActionId)
		return nil
	}
	if !p.votesHold(taskID, a.Approval) {
		return nil
	}
	if ok, err := p.termsHold(ctx, t, a); !ok || err != nil {
		return err
	}
	if why := task.ChangedSinceApproval(a.Snapshot, a.Approval, p.engine.Revision(), "the action"); why != "" {
		reasons := append([]string{"policy changed after the approval: " + why + "; propose the action again"}, a.Snapshot.GetReasons()...)
		return p.deny(ctx, taskID, a, reasons, rec.Event)
	}
	return p.permit(ctx, t, a, rec.Event)
}

// votesHold reports whether the request that opened approval ap holds
// (requestHolds), and every vote of it (is signed by this plane's key, or
// one it trusts, and is the vote recorded): an
// approval completed by a genuine vote may count one appended by another
// hand, and revalidation counts them all again. A vote that does not hold
// is logged and nothing follows the approval (no permit; for a plan, no
// start); what it is about stays as it is, where an operator sees it
// (docs/permits.md).
func (p *Plane) votesHold(taskID string, ap *stewardv1.Approval) bool {
	if p.signer == nil {
		return true
	}
	if !p.requestHolds(taskID, ap) {
		return false
	}
	for _, v := range ap.GetVotes() {
		if err := credential.VerifyVote(ap, v, p.credentials.trustedKeys()...); err != nil {
			p.logger.Error("approval vote refused, nothing follows the approval: "+err.Error(), "task", taskID, "action", ap.GetActionId(), "plan_hash", ap.GetPlanHash(), "approval", ap.GetApprovalId(), "decided_by", v.Principal)
			return false
		}
	}
	return true
}

func decisionWord(d stewardv1.ApprovalDecision) string {
	switch d {
	case stewardv1.ApprovalDecision_APPROVAL_DECISION_APPROVE:
		return "approved"
	case stewardv1.ApprovalDecision_APPROVAL_DECISION_AMEND:
		return "amended"
	case stewardv1.ApprovalDecision_APPROVAL_DECISION_PERSON_EXECUTES:
		return "approved for a person to execute"
	}
	return "rejected"
}

func jsonUnmarshal(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	return dec.Decode(v)
}
