package governance

import (
	"context"
	"fmt"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/steward-run/steward/pkg/action"
	"github.com/steward-run/steward/pkg/crashpoint"
	"github.com/steward-run/steward/pkg/errs"
	"github.com/steward-run/steward/pkg/event"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/task"
	"github.com/steward-run/steward/pkg/toolreg"
	"github.com/steward-run/steward/services/governance/policy"
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
const DefaultApproverRole = "authorizer"

// Evaluation rounds: on proposal, and again after an approval.
const (
	roundProposal = "proposal"
	roundApproved = "approved"
)

// decide reacts to a proposed action: it checks the budget and the task's
// credential, records a policy snapshot, then acts on the snapshot's
// decision. Each step runs only if the ledger says it has not happened
// yet, so a redelivery after a crash continues from the recorded snapshot
// instead of evaluating again.
func (p *Plane) decide(ctx context.Context, rec *stewardv1.EventRecord) error {
	a := rec.Event.GetActionProposed().GetAction()
	taskID := rec.Event.TaskId
	if t, _, err := task.Load(ctx, p.log, taskID); err == nil && task.FindAction(t, a.ActionId).GetStatus() == stewardv1.ActionStatus_ACTION_STATUS_PROPOSED {
		// What could not be permitted is denied before policy or a
		// person is asked about it.
		why, err := p.refuseEarly(ctx, t, a.ActionId, rec.Event)
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
	}
	t, err := p.evaluate(ctx, taskID, a.ActionId, roundProposal, stewardv1.ActionStatus_ACTION_STATUS_PROPOSED, rec.Event)
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
// now.
func (p *Plane) refuseEarly(ctx context.Context, t *stewardv1.Task, actionID string, cause *stewardv1.Event) (string, error) {
	a := task.FindAction(t, actionID)
	if line, spent := task.Spent(t); spent && a.Compensates == "" {
		return budgetSpentReason(line), nil
	}
	t, why, err := p.ensureCredential(ctx, t, cause)
	if err != nil {
		return "", err
	}
	if why != "" {
		return fmt.Sprintf("task %s has no credential: %s", t.Contract.GetTaskId(), why), nil
	}
	return p.credentialRefusal(ctx, t, a)
}

// evaluate records a policy snapshot for the action in round, if the
// action is in status from and the round has no snapshot yet, and returns
// the task after.
func (p *Plane) evaluate(ctx context.Context, taskID, actionID, round string, from stewardv1.ActionStatus, cause *stewardv1.Event) (*stewardv1.Task, error) {
	return task.Update(ctx, p.log, taskID, func(t *stewardv1.Task) (*stewardv1.Event, error) {
		a := task.FindAction(t, actionID)
		if a == nil {
			return nil, errs.New(errs.NotFound, "task %s has no action %s", taskID, actionID)
		}
		if a.Status != from || a.Snapshot.GetSnapshotId() == snapshotID(actionID, round) {
			// Moved on, or evaluated in this round before: a status that
			// stays (approved, revalidating) does not tell.
			return nil, nil
		}
		snap, err := p.snapshot(ctx, t, a, round)
		if err != nil {
			return nil, err
		}
		return event.New(p.meta(taskID, event.ID(actionID, event.TypePolicyEvaluated, round), cause), &stewardv1.PolicyEvaluated{ActionId: actionID, Snapshot: snap})
	})
}

// snapshot evaluates policy for one action. A Rego error is returned (the
// reaction retries); an undefined result is a deny, in the engine.
func (p *Plane) snapshot(ctx context.Context, t *stewardv1.Task, a *stewardv1.Action, round string) (*stewardv1.PolicySnapshot, error) {
	entry, err := p.tools.Lookup(ctx, p.log, a.Tool, a.ToolVersion)
	if err != nil {
		return nil, err
	}
	request, err := p.requests(ctx, a)
	if err != nil {
		return nil, err
	}
	input, inputHash, err := policyInput(t, entry.Tool.Contract, a, request)
	if err != nil {
		return nil, errs.Wrap(errs.Internal, err, "policy input for %s", a.ActionId)
	}
	res, err := p.engine.Evaluate(ctx, input)
	if err != nil {
		return nil, fmt.Errorf("evaluate policy for %s: %w", a.ActionId, err)
	}
	return &stewardv1.PolicySnapshot{
		SnapshotId:            snapshotID(a.ActionId, round),
		BundleRevision:        res.Revision,
		InputHash:             inputHash,
		Decision:              decisionOf(res.Decision),
		RiskTier:              riskOf(res.RiskTier, t.Contract.GetRiskTier()),
		RequiredApproverRoles: res.RequiredApproverRoles,
		Reasons:               res.Reasons,
		EvaluatedAt:           timestamppb.Now(),
	}, nil
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

// permit issues the action's one permit.
func (p *Plane) permit(ctx context.Context, t *stewardv1.Task, a *stewardv1.Action, cause *stewardv1.Event) error {
	taskID := t.Contract.TaskId
	// An approval of an action proposed before the task had a credential
	// needs one now; if none can be issued, the check below says so.
	if _, _, err := p.ensureCredential(ctx, t, cause); err != nil {
		return err
	}
	cost, err := p.callsCost(ctx, a)
	if err != nil {
		return err
	}
	_, err = task.Update(ctx, p.log, taskID, func(t *stewardv1.Task) (*stewardv1.Event, error) {
		cur := task.FindAction(t, a.ActionId)
		if cur.GetStatus() != a.Status || cur.Permit.GetPermitId() != a.Permit.GetPermitId() {
			return nil, nil
		}
		// A paused task still gets its permit: execution holds it until the
		// task resumes. An ended task gets none, nor does a compensating
		// task for anything but a compensation.
		// Nor does a task whose budget is spent, for anything but a
		// compensation (undoing is never held back for money): the
		// budget guard suspends it (budget.go).
		if line, spent := task.Spent(t); spent && cur.Compensates == "" && task.MayPermit(t, cur) {
			return event.New(p.meta(taskID, event.ID(a.ActionId, event.TypeActionDenied), cause), &stewardv1.ActionDenied{
				ActionId: a.ActionId, SnapshotId: cur.Snapshot.GetSnapshotId(),
				Reasons: []string{budgetSpentReason(line)}, CostMicros: cost,
			})
		}
		if !task.MayPermit(t, cur) {
			return event.New(p.meta(taskID, event.ID(a.ActionId, event.TypeActionDenied), cause), &stewardv1.ActionDenied{
				ActionId: a.ActionId, SnapshotId: cur.Snapshot.GetSnapshotId(),
				Reasons:    []string{fmt.Sprintf("the task is %s", task.StatusName(t.Status))},
				CostMicros: cost,
			})
		}
		// Checked here, on the task as it is when the permit is appended,
		// so that a revocation or an expiry since the proposal (or during
		// a long wait for approval) stops the permit.
		why, err := p.credentialRefusal(ctx, t, cur)
		if err != nil {
			return nil, err
		}
		if why != "" {
			return event.New(p.meta(taskID, event.ID(a.ActionId, event.TypeActionDenied), cause), &stewardv1.ActionDenied{
				ActionId: a.ActionId, SnapshotId: cur.Snapshot.GetSnapshotId(), Reasons: []string{why}, CostMicros: cost,
			})
		}
		credentialRef := t.Contract.GetCredentialRef()
		if c := t.Credential.GetCredential(); c != nil {
			credentialRef = c.CredentialId
		}
		prev := cur.Permit.GetPermitId()
		issued := time.Now()
		return event.New(p.meta(taskID, keyedBy(a.ActionId, event.TypeActionPermitted, prev), cause), &stewardv1.ActionPermitted{Permit: &stewardv1.ActionPermit{
			PermitId:      permitID(a.ActionId, prev),
			ActionId:      a.ActionId,
			ActionHash:    cur.ActionHash,
			RequestHash:   cur.RequestHash,
			SnapshotId:    cur.Snapshot.GetSnapshotId(),
			CredentialRef: credentialRef,
			IssuedAt:      timestamppb.New(issued),
			ExpiresAt:     timestamppb.New(issued.Add(p.permitTTL)),
		}})
	})
	if err == nil {
		crashpoint.Here(crashpoint.AfterPermit)
	}
	return err
}

// deny records that the action may not run.
func (p *Plane) deny(ctx context.Context, taskID string, a *stewardv1.Action, reasons []string, cause *stewardv1.Event) error {
	if len(reasons) == 0 {
		reasons = []string{"policy denied the action"}
	}
	cost, err := p.callsCost(ctx, a)
	if err != nil {
		return err
	}
	_, err = task.Update(ctx, p.log, taskID, func(t *stewardv1.Task) (*stewardv1.Event, error) {
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
func (p *Plane) callsCost(ctx context.Context, a *stewardv1.Action) (int64, error) {
	uncharged := int64(a.Attempt) - int64(a.Outcome.GetAttempt())
	if a.Attempt == 0 || uncharged <= 0 {
		return 0, nil
	}
	entry, err := p.tools.Lookup(ctx, p.log, a.Tool, a.ToolVersion)
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
	entry, err := p.tools.Get(a.Tool, a.ToolVersion)
	if err != nil {
		return err
	}
	request, err := p.requests(ctx, a)
	if err != nil {
		return err
	}
	params, err := paramsJSON(request)
	if err != nil {
		return err
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
		RequestedAt:     timestamppb.Now(),
	}
	taskID := t.Contract.TaskId
	cost, err := p.callsCost(ctx, a)
	if err != nil {
		return err
	}
	_, err = task.Update(ctx, p.log, taskID, func(t *stewardv1.Task) (*stewardv1.Event, error) {
		cur := task.FindAction(t, a.ActionId)
		if cur.GetStatus() != a.Status || cur.Permit.GetPermitId() != a.Permit.GetPermitId() {
			return nil, nil
		}
		// A credential revoked since the check before policy: ask nobody
		// for an approval that could lead to no permit.
		why, err := p.credentialRefusal(ctx, t, cur)
		if err != nil {
			return nil, err
		}
		if why != "" {
			return event.New(p.meta(taskID, event.ID(a.ActionId, event.TypeActionDenied), cause),
				&stewardv1.ActionDenied{ActionId: a.ActionId, SnapshotId: a.Snapshot.GetSnapshotId(), Reasons: []string{why}, CostMicros: cost})
		}
		return event.New(p.meta(taskID, keyedBy(a.ActionId, event.TypeApprovalRequired, a.Permit.GetPermitId()), cause), &stewardv1.ApprovalRequested{Approval: approval})
	})
	return err
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

// requests reads an action's canonical request, checked against its hash.
func (p *Plane) requests(ctx context.Context, a *stewardv1.Action) ([]byte, error) {
	return p.store.Get(ctx, a.RequestRef, a.RequestHash)
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
		CausationID:   cause.GetEventId(),
		CorrelationID: cause.GetCorrelationId(),
	}
}
