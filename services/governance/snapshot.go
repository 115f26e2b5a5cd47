package governance

import (
	"context"
	"fmt"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/steward-run/steward/pkg/crashpoint"
	"github.com/steward-run/steward/pkg/errs"
	"github.com/steward-run/steward/pkg/event"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/task"
	"github.com/steward-run/steward/services/governance/policy"
)

// evaluate records a policy snapshot for the action in j's round, if the
// action is in status j.from and the round has no snapshot yet, and
// returns the task after.
// Policy is evaluated once, on the task as read before the write; the
// write only checks that the action is still where the evaluation found
// it (a task moved on since held makes it decide again on the task as it
// is), and records nothing otherwise.
//
// An allow that nothing holds back is recorded with its permit, as one
// ActionPermitted that carries the snapshot: one append instead of two
// (withPermit says when it may be). The write makes every check the
// permit's own write makes (permitRefusal); where one fails it records
// the snapshot alone (PolicyEvaluated), and the caller goes on as for any
// snapshot, to the denial that says why — so a denial always follows its
// snapshot on the ledger, as before. The combined event is keyed as the
// permit is, so a redelivery finds it, whichever of the two shapes was
// written.
func (p *Plane) evaluate(ctx context.Context, j judging) (*stewardv1.Task, error) {
	taskID, actionID, round, from, rec := j.taskID, j.actionID, j.round, j.from, j.rec
	cause := rec.Event
	t := j.held
	if t == nil || t.LastSequence < rec.Sequence {
		var err error
		if t, _, err = p.tasks.LoadSince(ctx, taskID, rec.Sequence); err != nil {
			return nil, err
		}
	}
	a := task.FindAction(t, actionID)
	if a == nil {
		return nil, errs.New(errs.NotFound, "task %s has no action %s", taskID, actionID)
	}
	if !awaitsSnapshot(a, from, round) {
		if recordedUnused(a, from, round) {
			return p.checkRecorded(ctx, t, a, round, cause, nil)
		}
		return t, nil
	}
	if from == stewardv1.ActionStatus_ACTION_STATUS_REVALIDATING && a.Permit.GetPermitId() != permitOfRound(round) {
		// A late revalidation of a permit replaced since: its round is
		// not the one the action is in.
		return t, nil
	}
	dctx, span := decisionSpan(ctx, p.log.Tracer(), t, a)
	snap, err := p.snapshot(dctx, t, a, round)
	endDecision(span, snap, err)
	if err != nil {
		return nil, err
	}
	// The shape of the event, decided before the write: the snapshot
	// alone, or with its permit when the write finds nothing against it.
	// A task with no credential yet gets one (a write of its own) on the
	// two-event path, before its permit; here it takes that path.
	permitToo := withPermit(from) && snap.Decision == stewardv1.PolicyDecision_POLICY_DECISION_ALLOW && (p.signer == nil || t.Credential != nil)
	var check credentialCheck
	if permitToo {
		if check, err = p.credentials.readCredentialCheck(ctx, t, a); err != nil {
			return nil, err
		}
	}
	permit := a.Permit.GetPermitId()
	t, err = p.tasks.UpdateFrom(ctx, t, func(t *stewardv1.Task) (*stewardv1.Event, error) {
		// The evaluation holds for the action as it was read: in status
		// from, under the same permit (a revalidation's), unevaluated in
		// this round.
		cur := task.FindAction(t, actionID)
		if !awaitsSnapshot(cur, from, round) || cur.Permit.GetPermitId() != permit {
			return nil, nil
		}
		if permitToo && p.permitRefusal(t, cur, check) == "" {
			pm, err := p.permitted(t, cur, snap)
			if err != nil {
				return nil, err
			}
			return event.New(p.meta(taskID, keyedBy(actionID, event.TypeActionPermitted, permit), cause), pm)
		}
		pe, err := signed(p, &stewardv1.PolicyEvaluated{ActionId: actionID, Snapshot: snap})
		if err != nil {
			return nil, err
		}
		return event.New(p.meta(taskID, event.ID(actionID, event.TypePolicyEvaluated, round), cause), pe)
	})
	if err != nil {
		return t, err
	}
	if cur := task.FindAction(t, actionID); recordedUnused(cur, from, round) && !proto.Equal(cur.Snapshot, snap) {
		// Another hand recorded this round's snapshot while policy was
		// evaluated here: it is weighed as one found on the ledger.
		return p.checkRecorded(ctx, t, cur, round, cause, snap)
	}
	if permitToo && permittedUnder(task.FindAction(t, actionID), snap.SnapshotId) {
		crashpoint.Here(crashpoint.AfterPermit)
	}
	return t, nil
}

// judging is one evaluation: of action actionID of task taskID, in
// status from, for round, because of rec. held, when not nil, is the task
// as the caller last loaded or wrote it, its own, taken instead of a load
// when it holds rec.
type judging struct {
	held                    *stewardv1.Task
	taskID, actionID, round string
	from                    stewardv1.ActionStatus
	rec                     *stewardv1.EventRecord
}

// withPermit reports whether an allow of an action in status from may be
// recorded with its permit: a proposal's or a revalidation's may; an
// approved action's snapshot is recorded alone, since it is weighed
// against the approval (task.ChangedSinceApproval) before any permit.
func withPermit(from stewardv1.ActionStatus) bool {
	return from != stewardv1.ActionStatus_ACTION_STATUS_APPROVED
}

// recordedUnused reports whether a holds the snapshot of round, not yet
// acted on: evaluated (a proposal's) or still in status from.
func recordedUnused(a *stewardv1.Action, from stewardv1.ActionStatus, round string) bool {
	if a.GetSnapshot().GetSnapshotId() != snapshotID(a.GetActionId(), round) {
		return false
	}
	if from == stewardv1.ActionStatus_ACTION_STATUS_REVALIDATING && a.Permit.GetPermitId() != permitOfRound(round) {
		return false
	}
	return a.GetStatus() == from || from == stewardv1.ActionStatus_ACTION_STATUS_PROPOSED && a.GetStatus() == stewardv1.ActionStatus_ACTION_STATUS_EVALUATED
}

// checkRecorded weighs a snapshot of round found on the ledger, under
// the id this plane derives, before anything is decided on it. Anyone
// holding governance's NATS user can append one under that id, ahead of
// governance's own (docs/permits.md). So its signature, when it has one,
// must hold (snapshotFault); and policy is evaluated again, and the
// recorded snapshot is acted on only if it decides what policy decides
// now (the decision, the roles and the number of approvers asked).
// Otherwise it is logged and the action denied — the one outcome a
// forger could have recorded anyway.
// fresh, when not nil, is this plane's evaluation of round, made already.
func (p *Plane) checkRecorded(ctx context.Context, t *stewardv1.Task, a *stewardv1.Action, round string, cause *stewardv1.Event, fresh *stewardv1.PolicySnapshot) (*stewardv1.Task, error) {
	if fresh == nil {
		var err error
		if fresh, err = p.snapshot(ctx, t, a, round); err != nil {
			return nil, err
		}
	}
	rec := a.Snapshot
	why := ""
	if fault := p.snapshotFault(a); fault != "" {
		why = fmt.Sprintf("the policy snapshot %s on the ledger is not the one governance signed (%s): it is not acted on; propose the action again", rec.GetSnapshotId(), fault)
	} else if rec.GetDecision() != fresh.Decision || !task.SameRoles(rec.GetRequiredApproverRoles(), fresh.RequiredApproverRoles) ||
		max(1, rec.GetRequiredApprovals()) != max(1, fresh.RequiredApprovals) {
		why = fmt.Sprintf("the policy snapshot %s on the ledger says %s, but policy says %s now: it is not acted on; propose the action again",
			rec.GetSnapshotId(), rec.GetDecision(), fresh.Decision)
	}
	if why == "" {
		return t, nil
	}
	taskID := t.Contract.GetTaskId()
	p.logger.Error("policy snapshot refused, no permit follows: "+why, "task", taskID, "action", a.ActionId)
	if err := p.deny(ctx, taskID, a, []string{why}, cause); err != nil {
		return nil, err
	}
	t, _, err := p.tasks.Load(ctx, taskID)
	return t, err
}

// permittedUnder reports whether a holds a permit decided under the
// snapshot snapshotID.
func permittedUnder(a *stewardv1.Action, snapshotID string) bool {
	return a.GetStatus() == stewardv1.ActionStatus_ACTION_STATUS_PERMITTED && a.Permit.GetSnapshotId() == snapshotID
}

// awaitsSnapshot reports whether a is in status from with no snapshot of
// round yet: a status that stays (approved, revalidating) does not tell
// whether it was evaluated in this round before.
func awaitsSnapshot(a *stewardv1.Action, from stewardv1.ActionStatus, round string) bool {
	return a.GetStatus() == from && a.Snapshot.GetSnapshotId() != snapshotID(a.GetActionId(), round)
}

// snapshot evaluates policy for one action. A Rego error is returned (the
// reaction retries); an undefined result is a deny, in the engine.
func (p *Plane) snapshot(ctx context.Context, t *stewardv1.Task, a *stewardv1.Action, round string) (*stewardv1.PolicySnapshot, error) {
	entry, err := p.tools.Lookup(ctx, p.log, t.Tenant, a.Tool, a.ToolVersion)
	if err != nil {
		return nil, err
	}
	request, err := p.requests(ctx, a)
	if err != nil {
		return nil, err
	}
	tool, err := p.toolFacts.of(entry.Tool.Tenant, entry.Tool.Contract)
	if err != nil {
		return nil, errs.Wrap(errs.Internal, err, "policy input for %s", a.ActionId)
	}
	task, err := p.taskFacts.of(t)
	if err != nil {
		return nil, errs.Wrap(errs.Internal, err, "policy input for %s", a.ActionId)
	}
	buf := p.inputs.buffer()
	defer p.inputs.release(buf) // rec's bytes, kept below (keep copies them out)
	input, rec, err := p.inputs.policyInput(task, t, tool, a, request, buf)
	if err != nil {
		return nil, errs.Wrap(errs.Internal, err, "policy input for %s", a.ActionId)
	}
	res, err := p.engine.EvaluateValue(ctx, input)
	if p.evaluated != nil {
		p.evaluated()
	}
	if err != nil {
		return nil, fmt.Errorf("evaluate policy for %s: %w", a.ActionId, err)
	}
	kept, err := p.keep(ctx, t.Contract.GetTaskId(), rec, res)
	if err != nil {
		return nil, err
	}
	s := p.snapshotOf(snapshotID(a.ActionId, round), res, rec.hash, kept, t.Contract.GetRiskTier())
	askAlways(s, entry.Tool.Contract)
	holdContext(s, t, entry.Tool.Contract, request, p.now())
	return s, nil
}

// snapshotOf records res, policy's evaluation of an input whose hash is
// inputHash (kept in the policy store when kept), as snapshot id, for a
// task whose contract has tier.
func (p *Plane) snapshotOf(id string, res policy.Result, inputHash string, kept bool, tier stewardv1.RiskTier) *stewardv1.PolicySnapshot {
	return &stewardv1.PolicySnapshot{
		SnapshotId:            id,
		BundleRevision:        res.Revision,
		InputHash:             inputHash,
		InputKept:             kept,
		Decision:              decisionOf(res.Decision),
		RiskTier:              riskOf(res.RiskTier, tier),
		RequiredApproverRoles: res.RequiredApproverRoles,
		RequiredApprovals:     res.RequiredApprovals,
		Reasons:               res.Reasons,
		EvaluatedAt:           timestamppb.New(p.now()),
	}
}

// askAlways holds a tool to its default_approval: a tool whose author
// asks a person for every call gets one, whatever the bundle says. The
// default bundle asks too; a custom bundle that never reads the field
// cannot drop it. Policy may still deny.
func askAlways(s *stewardv1.PolicySnapshot, tool *stewardv1.ToolContract) {
	if tool.GetDefaultApproval() != stewardv1.ApprovalRule_APPROVAL_RULE_ALWAYS || s.Decision != stewardv1.PolicyDecision_POLICY_DECISION_ALLOW {
		return
	}
	s.Decision = stewardv1.PolicyDecision_POLICY_DECISION_REQUIRE_APPROVAL
	s.Reasons = append(s.Reasons, fmt.Sprintf("tool %s@%s asks a person for every call (default_approval APPROVAL_RULE_ALWAYS)", tool.GetName(), tool.GetVersion()))
}

func decisionOf(d string) stewardv1.PolicyDecision {
	switch d {
	case policy.Allow:
		return stewardv1.PolicyDecision_POLICY_DECISION_ALLOW
	case policy.RequireApproval:
		return stewardv1.PolicyDecision_POLICY_DECISION_REQUIRE_APPROVAL
	}
	return stewardv1.PolicyDecision_POLICY_DECISION_DENY
}

// riskOf takes the policy's tier, never lower than the contract's.
func riskOf(s string, contract stewardv1.RiskTier) stewardv1.RiskTier {
	t := stewardv1.RiskTier(stewardv1.RiskTier_value[s])
	return max(t, contract)
}
