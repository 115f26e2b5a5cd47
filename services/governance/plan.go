package governance

import (
	"context"
	"fmt"
	"strconv"

	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/steward-run/steward/pkg/errs"
	"github.com/steward-run/steward/pkg/event"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/taskstore"
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
	t, _, err := taskstore.LoadSince(ctx, p.log, taskID, rec.Sequence)
	if err != nil {
		return err
	}
	current := func(t *stewardv1.Task) bool {
		return t.PlanPolicy.GetVersion() == version && t.PlanPolicy.GetPlanHash() == hash
	}
	if !current(t) {
		return nil
	}
	if t.PlanPolicy.Snapshot == nil {
		snap, err := p.planSnapshot(ctx, t, s, rec.Event.GetActor().GetPrincipal(), roundProposal)
		if err != nil {
			return err
		}
		t, err = taskstore.UpdateFrom(ctx, p.log, t, func(t *stewardv1.Task) (*stewardv1.Event, error) {
			if !current(t) || t.PlanPolicy.Snapshot != nil {
				return nil, nil
			}
			return event.New(p.meta(taskID, planEventID(taskID, version, hash, event.TypePlanEvaluated), rec.Event),
				&stewardv1.PlanEvaluated{Version: version, PlanHash: hash, Snapshot: snap})
		})
		if err != nil {
			return err
		}
	}
	pp := t.PlanPolicy
	if !current(t) || pp.Snapshot.GetDecision() != stewardv1.PolicyDecision_POLICY_DECISION_REQUIRE_APPROVAL || pp.Approval != nil || pp.VerifiedApprovalId != "" {
		return nil
	}
	approval := p.planApprovalFor(t)
	_, err = taskstore.UpdateFrom(ctx, p.log, t, func(t *stewardv1.Task) (*stewardv1.Event, error) {
		if !current(t) || t.PlanPolicy.Approval != nil || t.PlanPolicy.Snapshot.GetSnapshotId() != pp.Snapshot.SnapshotId {
			return nil, nil
		}
		return event.New(p.meta(taskID, planEventID(taskID, version, hash, event.TypeApprovalRequired), rec.Event), &stewardv1.ApprovalRequested{Approval: approval})
	})
	return err
}

// planSnapshot evaluates the plan query for version s of t's plan,
// submitted by submittedBy, in round. A Rego error is returned (the
// reaction retries); an undefined result is a deny, in the engine.
func (p *Plane) planSnapshot(ctx context.Context, t *stewardv1.Task, s *stewardv1.PlanSubmitted, submittedBy, round string) (*stewardv1.PolicySnapshot, error) {
	input, inputHash, err := p.planInput(ctx, t, s, submittedBy)
	if err != nil {
		return nil, errs.Wrap(errs.Internal, err, "plan policy input for version %d", s.GetPlan().GetVersion())
	}
	res, err := p.engine.EvaluatePlan(ctx, input)
	if p.evaluated != nil {
		p.evaluated()
	}
	if err != nil {
		return nil, fmt.Errorf("evaluate plan policy for version %d: %w", s.GetPlan().GetVersion(), err)
	}
	id := planSnapshotID(t.Contract.GetTaskId(), s.GetPlan().GetVersion(), s.PlanHash, round)
	return p.snapshotOf(id, res, inputHash, t.Contract.GetRiskTier()), nil
}

// planApprovalFor is the approval governance opens for t's latest plan
// version, as its snapshot asks: bound to the version's hash, its
// submitter the proposer who may not approve it. Approvers read the plan
// itself with the task (GetTask), and name its hash when they decide.
func (p *Plane) planApprovalFor(t *stewardv1.Task) *stewardv1.Approval {
	pp := t.PlanPolicy
	roles := pp.Snapshot.GetRequiredApproverRoles()
	if len(roles) == 0 {
		roles = []string{DefaultApproverRole}
	}
	return &stewardv1.Approval{
		ApprovalId:        planApprovalID(t.Contract.GetTaskId(), pp.Version, pp.PlanHash),
		TaskId:            t.Contract.GetTaskId(),
		PlanVersion:       pp.Version,
		PlanHash:          pp.PlanHash,
		RequiredRoles:     roles,
		RequestedBy:       pp.SubmittedBy,
		PolicyReasons:     pp.Snapshot.GetReasons(),
		ExpectedImpact:    fmt.Sprintf("lets version %d of the task's plan start; each of its steps' actions is still judged by policy when it runs", pp.Version),
		RequestedAt:       timestamppb.New(p.now()),
		RequiredApprovals: pp.Snapshot.GetRequiredApprovals(),
	}
}

// submittedPlan reads from the log the PlanSubmitted of t's latest plan
// version, and who submitted it.
func (p *Plane) submittedPlan(ctx context.Context, t *stewardv1.Task) (*stewardv1.PlanSubmitted, string, error) {
	recs, err := p.log.Read(ctx, t.Contract.GetTaskId())
	if err != nil {
		return nil, "", err
	}
	pp := t.PlanPolicy
	for i := len(recs) - 1; i >= 0; i-- {
		if s := recs[i].Event.GetPlanSubmitted(); s != nil && s.GetPlan().GetVersion() == pp.GetVersion() && s.PlanHash == pp.GetPlanHash() {
			return s, recs[i].Event.GetActor().GetPrincipal(), nil
		}
	}
	return nil, "", errs.New(errs.NotFound, "task %s has no plan version %d on its log", t.Contract.GetTaskId(), pp.GetVersion())
}
