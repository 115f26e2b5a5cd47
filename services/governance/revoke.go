package governance

import (
	"context"
	"fmt"
	"strings"

	"github.com/steward-run/steward/pkg/access"
	"github.com/steward-run/steward/pkg/errs"
	"github.com/steward-run/steward/pkg/event"
	"github.com/steward-run/steward/pkg/eventlog"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/rpc"
)

// RevokeCredential revokes a task's credential for who, with a reason:
// nothing more is permitted to the task or to any task delegated from it,
// and its open approvals are closed (closeApprovals). Revoking a revoked
// credential returns it unchanged. A task without a credential yet gets
// one first, so that it can be revoked.
//
// Naming a schedule instead (schedule_id), it revokes the schedule's
// credential (revokeSchedule). A task's credential needs the operator
// role with tokens, which the edge checks (the access table leaves only a
// request naming a schedule to this plane); it is checked here again, in
// case a request ever reaches it otherwise.
func (cr *credentials) RevokeCredential(ctx context.Context, who rpc.Identity, req *stewardv1.RevokeCredentialRequest) (*stewardv1.CredentialState, error) {
	switch {
	case req.ScheduleId != "" && req.TaskId != "":
		return nil, errs.Field("schedule_id", "names a schedule: leave task_id empty, as a revocation revokes one credential")
	case req.ScheduleId != "":
		return cr.revokeSchedule(ctx, who, req)
	}
	if who.Verified && !who.HasRole(access.Operator) {
		return nil, errs.New(errs.PermissionDenied, "%s may not revoke the credential of task %s: that needs the operator role", who.Principal, req.TaskId)
	}
	if err := cr.checkOperatorCommand(ctx, who, req.TaskId, req.Reason, "revoke"); err != nil {
		return nil, err
	}
	_, why, err := cr.issue(ctx, req.TaskId, nil, 0)
	if err != nil {
		return nil, err
	}
	t, err := cr.tasks.Update(ctx, req.TaskId, func(t *stewardv1.Task) (*stewardv1.Event, error) {
		cs := t.Credential
		switch {
		case cs == nil:
			return nil, errs.New(errs.FailedPrecondition, "task %s has no credential to revoke: %s", req.TaskId, why)
		case cs.Revoked:
			return nil, nil
		}
		id := cs.Credential.GetCredentialId()
		return event.New(event.Meta{
			ID:     event.ID(req.TaskId, event.TypeCredentialRevoked, id),
			TaskID: req.TaskId,
			Actor:  &stewardv1.Actor{Principal: who.Principal, Plane: PlaneName},
			Time:   cr.now(),
		}, &stewardv1.CredentialRevoked{CredentialId: id, Reason: req.Reason})
	})
	if err != nil {
		return nil, err
	}
	return t.Credential, nil
}

// checkOperatorCommand checks a revocation or renewal: a task that
// exists, a reason, and the operator role when callers are authenticated.
func (cr *credentials) checkOperatorCommand(ctx context.Context, who rpc.Identity, taskID, reason, verb string) error {
	switch {
	case taskID == "":
		return errs.Field("task_id", "is required")
	case !eventlog.ValidTaskID(taskID):
		return errs.Field("task_id", "%s is not a task id: "+eventlog.TaskIDRule, errs.Quote(taskID))
	}
	if err := cr.checkReason(reason, verb); err != nil {
		return err
	}
	_, _, err := cr.tasks.Load(ctx, taskID)
	return err
}

// checkReason checks the reason for a revocation or renewal, and that
// this plane issues credentials.
func (cr *credentials) checkReason(reason, verb string) error {
	switch {
	case reason == "":
		return errs.Field("reason", "is required: say why the credential is %s", pastTense(verb))
	case len(reason) > MaxRevokeReasonLen:
		return &errs.Error{Code: errs.TooLarge, Field: "reason", Message: fmt.Sprintf("is longer than %d bytes", MaxRevokeReasonLen)}
	}
	if cr.signer == nil {
		return errs.New(errs.FailedPrecondition, "this governance plane issues no credentials")
	}
	return nil
}

func pastTense(verb string) string { return strings.TrimSuffix(verb, "e") + "ed" }
