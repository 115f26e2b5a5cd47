package governance

import (
	"context"
	"fmt"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/steward-run/steward/pkg/action"
	"github.com/steward-run/steward/pkg/errs"
	"github.com/steward-run/steward/pkg/event"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/task"
	"github.com/steward-run/steward/pkg/toolreg"
)

// Stable ids for what governance records about an action. Redelivery of
// the cause derives the same ids, so nothing is recorded twice. An
// action's first approval and permit are keyed by the action alone; those
// that follow a revalidation, by the permit that was not used (prev), so
// that each revalidation has its own.
func snapshotID(actionID, round string) string { return "snap-" + event.ID(actionID, round)[:24] }
func approvalID(actionID, prev string) string {
	if prev == "" {
		return "apv-" + event.ID(actionID, "approval")[:24]
	}
	return "apv-" + event.ID(actionID, "approval", prev)[:24]
}
func permitID(actionID, prev string) string {
	if prev == "" {
		return "pmt-" + event.ID(actionID, "permit")[:24]
	}
	return "pmt-" + event.ID(actionID, "permit", prev)[:24]
}

// keyedBy returns the id parts of an event about an action, with prev (the
// permit a revalidation did not use) when there is one.
func keyedBy(actionID, typ, prev string) string {
	if prev == "" {
		return event.ID(actionID, typ)
	}
	return event.ID(actionID, typ, prev)
}

// DefaultApproverRole decides approvals for which policy named no role.
const DefaultApproverRole = task.DefaultApproverRole

// Evaluation rounds: on proposal, and again after an approval.
const (
	roundProposal = "proposal"
	roundApproved = "approved"
)

// judge reacts to a proposed action: it checks the budget and the task's
// credential, records a policy snapshot, then acts on the snapshot's
// decision. An allow that nothing holds back is recorded with its permit,
// in one event (evaluate). Each step runs only if the ledger says it has
// not happened yet, so a redelivery after a crash continues from the
// recorded snapshot (or permit) instead of evaluating again.
func (p *Plane) judge(ctx context.Context, rec *stewardv1.EventRecord, proposed *stewardv1.ActionProposed) error {
	a := proposed.GetAction()
	taskID := rec.Event.TaskId
	var held *stewardv1.Task // the task as the checks left it, for the evaluation
	if t, _, err := p.tasks.LoadSince(ctx, taskID, rec.Sequence); err == nil && task.FindAction(t, a.ActionId).GetStatus() == stewardv1.ActionStatus_ACTION_STATUS_PROPOSED {
		// What could not be permitted is denied before policy or a
		// person is asked about it.
		t, why, err := p.refuseEarly(ctx, t, a.ActionId, rec.Event)
		if errs.Is(err, errs.Corrupt) {
			// What the check must read (an ancestor's history) is broken:
			// say so on the ledger rather than leave the action proposed.
			why, err = "the task's credential cannot be checked: "+err.Error(), nil
		}
		if err != nil {
			return err
		}
		if why != "" {
			proposed := &stewardv1.Action{ActionId: a.ActionId, Status: stewardv1.ActionStatus_ACTION_STATUS_PROPOSED}
			return p.deny(ctx, taskID, proposed, []string{why}, rec.Event)
		}
		held = t
	}
	t, err := p.evaluate(ctx, judging{held: held, taskID: taskID, actionID: a.ActionId, round: roundProposal, from: stewardv1.ActionStatus_ACTION_STATUS_PROPOSED, rec: rec})
	if errs.Is(err, errs.Corrupt) || errs.Is(err, errs.NotFound) {
		// The action cannot be judged (its stored request or its tool is
		// gone): say so on the ledger rather than leave it proposed.
		proposed := &stewardv1.Action{ActionId: a.ActionId, Status: stewardv1.ActionStatus_ACTION_STATUS_PROPOSED}
		return p.deny(ctx, taskID, proposed, []string{"the action cannot be evaluated: " + err.Error()}, rec.Event)
	}
	if err != nil {
		return err
	}
	cur := task.FindAction(t, a.ActionId)
	if cur.GetStatus() != stewardv1.ActionStatus_ACTION_STATUS_EVALUATED {
		return nil // decided before
	}
	switch cur.Snapshot.GetDecision() {
	case stewardv1.PolicyDecision_POLICY_DECISION_ALLOW:
		return p.permit(ctx, t, cur, rec.Event)
	case stewardv1.PolicyDecision_POLICY_DECISION_REQUIRE_APPROVAL:
		return p.requestApproval(ctx, t, cur, rec.Event)
	default:
		return p.deny(ctx, taskID, cur, cur.Snapshot.GetReasons(), rec.Event)
	}
}

// refuseEarly says why a just proposed action of t could not be
// permitted whatever policy says: the task's budget is spent (not for a
// compensation: undoing is never held back for money), or its credential
// does not allow it. A credential the task does not have yet is issued
// now; the task returned is t as it is after that.
func (p *Plane) refuseEarly(ctx context.Context, t *stewardv1.Task, actionID string, cause *stewardv1.Event) (*stewardv1.Task, string, error) {
	a := task.FindAction(t, actionID)
	if line, spent := task.Spent(t); spent && a.Compensates == "" {
		return t, budgetSpentReason(line), nil
	}
	t, why, err := p.credentials.ensureCredential(ctx, t, cause)
	if err != nil {
		return t, "", err
	}
	if why != "" {
		return t, fmt.Sprintf("task %s has no credential: %s", t.Contract.GetTaskId(), why), nil
	}
	why, err = p.credentials.credentialRefusal(ctx, t, a)
	return t, why, err
}

// deny records that the action may not run.
func (p *Plane) deny(ctx context.Context, taskID string, a *stewardv1.Action, reasons []string, cause *stewardv1.Event) error {
	if len(reasons) == 0 {
		reasons = []string{"policy denied the action"}
	}
	cost, err := p.callsCost(ctx, taskID, a)
	if err != nil {
		return err
	}
	err = p.tasks.Write(ctx, taskID, func(t *stewardv1.Task) (*stewardv1.Event, error) {
		if task.FindAction(t, a.ActionId).GetStatus() != a.Status {
			return nil, nil
		}
		return event.New(p.meta(taskID, event.ID(a.ActionId, event.TypeActionDenied), cause),
			&stewardv1.ActionDenied{ActionId: a.ActionId, SnapshotId: a.Snapshot.GetSnapshotId(), Reasons: reasons, CostMicros: cost})
	})
	return err
}

// callsCost is what the calls already made for a, and not yet charged by
// an outcome, cost at the tool contract's price: an action denied on
// revalidation after a try still paid for it. A retry's transient failure
// records no outcome (its cost goes on the last attempt's); an unknown
// outcome, later settled "not accepted", was charged when recorded.
func (p *Plane) callsCost(ctx context.Context, taskID string, a *stewardv1.Action) (int64, error) {
	uncharged := int64(a.Attempt) - int64(a.Outcome.GetAttempt())
	if a.Attempt == 0 || uncharged <= 0 {
		return 0, nil
	}
	tenant, err := p.tasks.Tenant(ctx, taskID)
	if err != nil {
		return 0, err
	}
	entry, err := p.tools.Lookup(ctx, p.log, tenant, a.Tool, a.ToolVersion)
	if errs.Is(err, errs.NotFound) {
		return 0, nil // no price to charge by
	} else if err != nil {
		return 0, err
	}
	return entry.Tool.Contract.GetCostMicrosPerCall() * uncharged, nil
}

// requestApproval asks for a person's decision, with what they need to make
// it.
func (p *Plane) requestApproval(ctx context.Context, t *stewardv1.Task, a *stewardv1.Action, cause *stewardv1.Event) error {
	approval, err := p.approvalFor(ctx, t, a)
	if err != nil {
		return err
	}
	taskID := t.Contract.TaskId
	cost, check, err := p.readForDecision(ctx, t, a)
	if err != nil {
		return err
	}
	_, err = p.tasks.UpdateFrom(ctx, t, func(t *stewardv1.Task) (*stewardv1.Event, error) {
		cur := task.FindAction(t, a.ActionId)
		if moved(cur, a) {
			return nil, nil
		}
		// A credential revoked since the check before policy: ask nobody
		// for an approval that could lead to no permit.
		if why := p.credentials.refuseCredential(t, cur, check); why != "" {
			return event.New(p.meta(taskID, event.ID(a.ActionId, event.TypeActionDenied), cause),
				&stewardv1.ActionDenied{ActionId: a.ActionId, SnapshotId: a.Snapshot.GetSnapshotId(), Reasons: []string{why}, CostMicros: cost})
		}
		req, err := signed(p, &stewardv1.ApprovalRequested{Approval: approval})
		if err != nil {
			return nil, err
		}
		return event.New(p.meta(taskID, keyedBy(a.ActionId, event.TypeApprovalRequired, a.Permit.GetPermitId()), cause), req)
	})
	return err
}

// approvalFor is the approval governance opens for a of t: what the
// approvers read, from the tool's contract and the action's stored
// request, and what policy asks of them (a's snapshot).
func (p *Plane) approvalFor(ctx context.Context, t *stewardv1.Task, a *stewardv1.Action) (*stewardv1.Approval, error) {
	entry, err := p.tools.Get(t.Tenant, a.Tool, a.ToolVersion)
	if err != nil {
		return nil, err
	}
	request, err := p.requests(ctx, a)
	if err != nil {
		return nil, err
	}
	params, err := paramsJSON(request)
	if err != nil {
		return nil, err
	}
	tool := entry.Tool.Contract
	roles := a.Snapshot.GetRequiredApproverRoles()
	if len(roles) == 0 {
		// An approval nobody may decide would hold the task forever.
		roles = []string{DefaultApproverRole}
	}
	approval := &stewardv1.Approval{
		ApprovalId:      approvalID(a.ActionId, a.Permit.GetPermitId()),
		TaskId:          t.Contract.TaskId,
		ActionId:        a.ActionId,
		ActionHash:      a.ActionHash,
		RequiredRoles:   roles,
		RequestedBy:     a.ProposedBy,
		Tool:            tool.Name,
		ToolVersion:     tool.Version,
		Target:          a.Target,
		ParametersJson:  params,
		EffectClass:     tool.EffectClass,
		DataSensitivity: tool.DataSensitivity,
		PolicyReasons:   a.Snapshot.GetReasons(),
		ExpectedImpact:  impact(tool, a),
		Rollback:        tool.CompensatingTool,
		RequestedAt:     timestamppb.New(p.now()),
		// N distinct approvers when policy asks for more than one.
		RequiredApprovals: a.Snapshot.GetRequiredApprovals(),
		// The proposer's own case, beside Steward's summary above.
		Rationale: proto.CloneOf(a.Rationale),
	}
	return approval, nil
}

// termsHold reports whether the approval a holds shows its approvers
// what governance would have shown them: the action's tool, target,
// parameters, effect, impact, rollback and rationale. One recorded
// before approval requests were signed carries no signature
// (unsignedFromBefore), and one appended ahead of governance's by another
// hand could have shown a harmless call while its hash named a dangerous
// one; no permit follows such an approval.
func (p *Plane) termsHold(ctx context.Context, t *stewardv1.Task, a *stewardv1.Action) (bool, error) {
	want, err := p.approvalFor(ctx, t, a)
	if err != nil {
		return false, err
	}
	got := a.Approval
	if got.GetTaskId() == want.TaskId && got.GetActionId() == want.ActionId && got.GetTool() == want.Tool && got.GetToolVersion() == want.ToolVersion &&
		got.GetTarget() == want.Target && got.GetParametersJson() == want.ParametersJson && got.GetEffectClass() == want.EffectClass &&
		got.GetDataSensitivity() == want.DataSensitivity && got.GetExpectedImpact() == want.ExpectedImpact && got.GetRollback() == want.Rollback &&
		got.GetRequestedBy() == want.RequestedBy && proto.Equal(got.GetRationale(), want.Rationale) {
		return true, nil
	}
	p.logger.Error("approval refused, no permit follows: approval "+got.GetApprovalId()+" showed its approvers other terms than the action's",
		"task", t.Contract.GetTaskId(), "action", a.ActionId, "shown", got.GetTool()+" "+got.GetTarget()+" "+got.GetParametersJson(), "action_terms", want.Tool+" "+want.Target+" "+want.ParametersJson)
	return false, nil
}

// impact says in a sentence what running the action would do.
func impact(tool *stewardv1.ToolContract, a *stewardv1.Action) string {
	what := map[stewardv1.EffectClass]string{
		stewardv1.EffectClass_EFFECT_CLASS_READ:             "reads",
		stewardv1.EffectClass_EFFECT_CLASS_IDEMPOTENT_WRITE: "writes (repeatable)",
		stewardv1.EffectClass_EFFECT_CLASS_REVERSIBLE_WRITE: "writes (can be undone with " + tool.CompensatingTool + ")",
		stewardv1.EffectClass_EFFECT_CLASS_IRREVERSIBLE:     "makes an irreversible change",
	}[tool.EffectClass]
	target := a.Target
	if target == "" {
		target = "its target"
	}
	retry := "a failed call may be retried with the same op_key"
	if r := tool.GetIdempotency().GetRetention(); r != nil && tool.GetEffectClass() != stewardv1.EffectClass_EFFECT_CLASS_READ {
		retry += " within the tool's retention of " + r.AsDuration().String()
	}
	if !toolreg.MayRepeat(tool) {
		// What an approver must know: one approval, at most one effect.
		retry = "no automatic retry once a call may have reached the tool: its outcome is settled by the tool's status query or a person"
	}
	return fmt.Sprintf("%s %s %s; %s", tool.Name, what, target, retry)
}

// requests reads an action's canonical request, inline or stored, checked
// against its hash.
func (p *Plane) requests(ctx context.Context, a *stewardv1.Action) ([]byte, error) {
	return p.store.Request(ctx, a.Request, a.RequestRef, a.RequestHash)
}

func paramsJSON(request []byte) (string, error) {
	var req struct {
		Params any `json:"params"`
	}
	if err := jsonUnmarshal(request, &req); err != nil {
		return "", err
	}
	b, err := action.CanonicalJSON(req.Params)
	return string(b), err
}

func (p *Plane) meta(taskID, id string, cause *stewardv1.Event) event.Meta {
	return event.Meta{
		ID:            id,
		TaskID:        taskID,
		Actor:         &stewardv1.Actor{Principal: "steward", Plane: PlaneName},
		Time:          p.now(),
		CausationID:   cause.GetEventId(),
		CorrelationID: cause.GetCorrelationId(),
	}
}
