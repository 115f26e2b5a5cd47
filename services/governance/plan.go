package governance

import (
	"context"
	"fmt"
	"strconv"

	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/steward-run/steward/pkg/errs"
	"github.com/steward-run/steward/pkg/event"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// Stable ids for what governance records about a plan version: a
// redelivery of its cause derives the same ones. A version is named by
// its number and hash together.
func planSnapshotID(taskID string, version uint32, hash, round string) string {
	return "psnap-" + event.ID(taskID, "plan", strconv.FormatUint(uint64(version), 10), hash, round)[:24]
}
func planApprovalID(taskID string, version uint32, hash string) string {
	return "apv-" + event.ID(taskID, "plan", strconv.FormatUint(uint64(version), 10), hash, "approval")[:24]
}
func planEventID(taskID string, version uint32, hash string, parts ...string) string {
	return event.ID(append([]string{taskID, "plan", strconv.FormatUint(uint64(version), 10), hash}, parts...)...)
}

// judgePlan reacts to a submitted plan version: it evaluates the bundle's
// plan query into a snapshot, records it (PlanEvaluated), and when policy
// asks for a person, opens an approval of the whole version, bound to its
// hash. A version revised before it was judged is not judged: the new one
// is. Each step is skipped when the ledger shows it done, so a redelivery
// records nothing twice and continues where a crash left off.
func (p *Plane) judgePlan(ctx context.Context, rec *stewardv1.EventRecord, s *stewardv1.PlanSubmitted) error {
	taskID, version, hash := rec.Event.TaskId, s.GetPlan().GetVersion(), s.PlanHash
	t, _, err := p.tasks.LoadSince(ctx, taskID, rec.Sequence)
	if err != nil {
		return err
	}
	inForce := func(t *stewardv1.Task, g stewardv1.PlanGovernance) bool {
		return t.Plan.GetVersion() == version && t.Plan.GetPlanHash() == hash && t.Plan.GetGovernance() == g
	}
	if inForce(t, stewardv1.PlanGovernance_PLAN_GOVERNANCE_PENDING) {
		snap, err := p.planSnapshot(ctx, t, roundProposal)
		if err != nil {
			return err
		}
		t, err = p.tasks.UpdateFrom(ctx, t, func(t *stewardv1.Task) (*stewardv1.Event, error) {
			if !inForce(t, stewardv1.PlanGovernance_PLAN_GOVERNANCE_PENDING) {
				return nil, nil
			}
			pe, err := signed(p, &stewardv1.PlanEvaluated{Version: version, PlanHash: hash, Snapshot: snap})
			if err != nil {
				return nil, err
			}
			return event.New(p.meta(taskID, planEventID(taskID, version, hash, event.TypePlanEvaluated), rec.Event), pe)
		})
		if err != nil {
			return err
		}
	}
	if !inForce(t, stewardv1.PlanGovernance_PLAN_GOVERNANCE_AWAITING_APPROVAL) || t.Plan.Approval != nil {
		return nil
	}
	approval := p.planApprovalFor(t)
	_, err = p.tasks.UpdateFrom(ctx, t, func(t *stewardv1.Task) (*stewardv1.Event, error) {
		if !inForce(t, stewardv1.PlanGovernance_PLAN_GOVERNANCE_AWAITING_APPROVAL) || t.Plan.Approval != nil {
			return nil, nil
		}
		req, err := signed(p, &stewardv1.ApprovalRequested{Approval: approval})
		if err != nil {
			return nil, err
		}
		return event.New(p.meta(taskID, planEventID(taskID, version, hash, event.TypeApprovalRequired), rec.Event), req)
	})
	return err
}

// planSnapshot evaluates the plan query for t's plan in force, in round.
// A Rego error is returned (the reaction retries); an undefined result is
// a deny, in the engine.
func (p *Plane) planSnapshot(ctx context.Context, t *stewardv1.Task, round string) (*stewardv1.PolicySnapshot, error) {
	ps := t.Plan
	input, rec, err := p.planInput(ctx, t)
	if err != nil {
		return nil, errs.Wrap(errs.Internal, err, "plan policy input for version %d", ps.Version)
	}
	res, err := p.engine.EvaluatePlan(ctx, input)
	if p.evaluated != nil {
		p.evaluated()
	}
	if err != nil {
		return nil, fmt.Errorf("evaluate plan policy for version %d: %w", ps.Version, err)
	}
	kept, err := p.keep(ctx, t.Contract.GetTaskId(), rec, res)
	if err != nil {
		return nil, err
	}
	id := planSnapshotID(t.Contract.GetTaskId(), ps.Version, ps.PlanHash, round)
	return p.snapshotOf(id, res, rec.hash, kept, t.Contract.GetRiskTier()), nil
}

// planApprovalFor is the approval governance opens for t's plan in force,
// as its snapshot asks: bound to the version's hash, its submitter the
// proposer who may not approve it. Approvers read the plan itself with
// the task (GetTask), and name its hash when they decide.
func (p *Plane) planApprovalFor(t *stewardv1.Task) *stewardv1.Approval {
	ps := t.Plan
	roles := ps.Snapshot.GetRequiredApproverRoles()
	if len(roles) == 0 {
		roles = []string{DefaultApproverRole}
	}
	return &stewardv1.Approval{
		ApprovalId:        planApprovalID(t.Contract.GetTaskId(), ps.Version, ps.PlanHash),
		TaskId:            t.Contract.GetTaskId(),
		PlanVersion:       ps.Version,
		PlanHash:          ps.PlanHash,
		RequiredRoles:     roles,
		RequestedBy:       ps.SubmittedBy,
		PolicyReasons:     ps.Snapshot.GetReasons(),
		ExpectedImpact:    fmt.Sprintf("lets version %d of the task's plan start; each of its steps' actions is still judged by policy when it runs", ps.Version),
		RequestedAt:       timestamppb.New(p.now()),
		RequiredApprovals: ps.Snapshot.GetRequiredApprovals(),
	}
}
