package control

import (
	"context"
	"time"

	"github.com/steward-run/steward/pkg/errs"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// credentialInForce refuses, as FailedPrecondition, a task t whose
// credential cannot back new work at now: none issued yet, revoked,
// expired, or revoked up its delegation chain (a run's schedule's
// included). Governance would refuse
// every action under it, so what would only start such actions — a
// delegation, a plan — is refused at once instead, appending nothing.
func (p *Plane) credentialInForce(ctx context.Context, t *stewardv1.Task, now time.Time) error {
	id := t.Contract.GetTaskId()
	cs := t.Credential
	switch {
	case cs == nil:
		return errs.New(errs.FailedPrecondition, "task %s has no credential yet: governance issues it when the task is created; try again", id)
	case cs.Revoked:
		return errs.New(errs.FailedPrecondition, "credential %s of task %s was revoked (%s)", cs.Credential.GetCredentialId(), id, cs.RevokedReason)
	case cs.Credential.GetExpiresAt() != nil && !now.Before(cs.Credential.ExpiresAt.AsTime()):
		return errs.New(errs.FailedPrecondition, "credential %s of task %s expired at %s", cs.Credential.CredentialId, id, cs.Credential.ExpiresAt.AsTime().Format(time.RFC3339))
	}
	r, err := p.tasks.RevokedAbove(ctx, t)
	switch {
	case err != nil:
		return err
	case r == nil:
		return nil
	case r.Why != "":
		return errs.New(errs.FailedPrecondition, "task %s may not act: %s", id, r.Why)
	case r.Schedule:
		return errs.New(errs.FailedPrecondition, "credential %s of schedule %s, from which task %s was delegated, was revoked (%s)", r.Credential.GetCredential().GetCredentialId(), r.TaskID, id, r.Credential.RevokedReason)
	}
	return errs.New(errs.FailedPrecondition, "credential %s of task %s, from which task %s was delegated, was revoked (%s)", r.Credential.GetCredential().GetCredentialId(), r.TaskID, id, r.Credential.RevokedReason)
}
