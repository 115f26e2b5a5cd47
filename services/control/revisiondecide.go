package control

import (
	"context"
	"fmt"
	"strings"

	"connectrpc.com/connect"

	"github.com/steward-run/steward/pkg/errs"
	"github.com/steward-run/steward/pkg/event"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/requestid"
	"github.com/steward-run/steward/pkg/rpc"
	"github.com/steward-run/steward/pkg/task"
)

// DecideContractRevision approves or rejects a task's open contract
// revision, recorded as ContractRevisionDecided, bound to its hash. The
// capacity is the caller's: the accountable owner decides as owner; a
// holder of a role the revision's policy snapshot names, as its approver
// (the role is checked here, against the caller's identity; the rest —
// not the proposer, not the owner who approved — by the fold); the
// proposer may withdraw their own. A rejection needs a comment.
func (p revisions) DecideContractRevision(ctx context.Context, who rpc.Identity, req *stewardv1.DecideContractRevisionRequest) (_ *stewardv1.Task, _ *stewardv1.ContractRevision, err error) {
	if err := checkDecideRevision(req); err != nil {
		return nil, nil, err
	}
	u, err := p.claimRequestID(ctx, who.Principal, requestid.DecideContractRevision, req.TaskId, req.RequestId, req)
	if err != nil {
		return nil, nil, err
	}
	defer u.settle(ctx, &err)
	t, history, err := p.tasks.Load(ctx, req.TaskId)
	if err != nil {
		return nil, nil, err
	}
	if u.id != "" && history.Has(u.id) {
		return t, task.FindRevision(t, req.RevisionId), nil // a retry of a recorded decision
	}
	r := task.OpenRevision(t)
	switch {
	case task.Terminal(t.Status):
		return nil, nil, &errs.Error{Code: errs.FailedPrecondition, Field: "task_id", Message: fmt.Sprintf("task %s is %s: its contract is no longer revised", req.TaskId, task.StatusName(t.Status))}
	case r == nil || r.RevisionId != req.RevisionId:
		return nil, nil, &errs.Error{Code: errs.FailedPrecondition, Field: "revision_id", Message: fmt.Sprintf("%s is not the open contract revision of task %s", errs.Quote(req.RevisionId), req.TaskId)}
	}
	capacity, role := revisionCapacity(t, r, who, req.Approve)
	if err := task.MayDecideRevision(t, r, who.Principal, capacity, role, req.Approve); err != nil {
		if capacity == stewardv1.ContractRevisionCapacity_CONTRACT_REVISION_CAPACITY_POLICY_APPROVER && r.Snapshot == nil {
			return nil, nil, errs.New(errs.FailedPrecondition, "policy has not judged contract revision %s yet: its accountable owner %s may decide it now, a role's holder once policy asks for one", r.RevisionId, t.Contract.GetAccountableOwnerRef())
		}
		return nil, nil, err
	}
	d := &stewardv1.ContractRevisionDecision{DecidedBy: who.Principal, Approve: req.Approve, Comment: req.Comment, Capacity: capacity, Role: role}
	t, err = p.apply(ctx, req.TaskId, func(*stewardv1.Task) (*stewardv1.Event, error) {
		return p.event(event.Meta{ID: u.id, TaskID: req.TaskId, Actor: p.actor(who.Principal), CorrelationID: req.RequestId, Time: p.now()},
			&stewardv1.ContractRevisionDecided{RevisionId: r.RevisionId, ContractHash: r.ContractHash, Decision: d})
	})
	if err != nil {
		return nil, nil, err
	}
	return t, task.FindRevision(t, r.RevisionId), nil
}

// revisionCapacity is the capacity who decides r in, and the role they
// hold for it: the accountable owner's first while theirs is owed (or to
// reject), then a required role's holder, then the proposer withdrawing.
// One that fits none is named as what they would have to be, for the
// refusal (task.MayDecideRevision).
func revisionCapacity(t *stewardv1.Task, r *stewardv1.ContractRevision, who rpc.Identity, approve bool) (stewardv1.ContractRevisionCapacity, string) {
	owner := who.Principal == t.Contract.GetAccountableOwnerRef()
	if owner && (r.OwnerApprovedBy == "" || !approve) {
		return stewardv1.ContractRevisionCapacity_CONTRACT_REVISION_CAPACITY_OWNER, ""
	}
	for _, role := range r.Snapshot.GetRequiredApproverRoles() {
		if who.Holds(role) {
			return stewardv1.ContractRevisionCapacity_CONTRACT_REVISION_CAPACITY_POLICY_APPROVER, role
		}
	}
	if !approve && who.Principal == r.ProposedBy {
		return stewardv1.ContractRevisionCapacity_CONTRACT_REVISION_CAPACITY_PROPOSER, ""
	}
	if owner || !task.RevisionNeedsRole(r) && r.Snapshot != nil {
		return stewardv1.ContractRevisionCapacity_CONTRACT_REVISION_CAPACITY_OWNER, ""
	}
	return stewardv1.ContractRevisionCapacity_CONTRACT_REVISION_CAPACITY_POLICY_APPROVER, "" // holding none of the roles
}

// checkDecideRevision checks a DecideContractRevision request as sent.
func checkDecideRevision(req *stewardv1.DecideContractRevisionRequest) error {
	if err := checkCommand(req.TaskId, req.RequestId, ""); err != nil {
		return err
	}
	if err := checkText("revision_id", req.RevisionId, MaxRefLen, true); err != nil {
		return err
	}
	if err := checkText("comment", req.Comment, MaxTextLen, false); err != nil {
		return err
	}
	if !req.Approve && strings.TrimSpace(req.Comment) == "" {
		return errs.Field("comment", "is required to reject: say why")
	}
	return nil
}

func (s *taskService) DecideContractRevision(ctx context.Context, req *connect.Request[stewardv1.DecideContractRevisionRequest]) (*connect.Response[stewardv1.DecideContractRevisionResponse], error) {
	who := rpc.Caller(ctx)
	t, r, err := revisions{s.plane}.DecideContractRevision(ctx, who, req.Msg)
	if err != nil {
		return nil, err
	}
	// A role's holder decides without being named by the task.
	return connect.NewResponse(&stewardv1.DecideContractRevisionResponse{Task: s.shown(ctx, who, t), Revision: r}), nil
}
