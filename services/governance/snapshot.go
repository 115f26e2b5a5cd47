package governance

import (
	"context"
	"fmt"

	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/steward-run/steward/pkg/errs"
	"github.com/steward-run/steward/pkg/event"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/task"
	"github.com/steward-run/steward/pkg/taskstore"
	"github.com/steward-run/steward/services/governance/policy"
)

// evaluate records a policy snapshot for the action in round, if the
// action is in status from and the round has no snapshot yet, and returns
// the task after.
func (p *Plane) evaluate(ctx context.Context, taskID, actionID, round string, from stewardv1.ActionStatus, cause *stewardv1.Event) (*stewardv1.Task, error) {
	return taskstore.Update(ctx, p.log, taskID, func(t *stewardv1.Task) (*stewardv1.Event, error) {
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
