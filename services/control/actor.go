package control

import (
	"context"

	"github.com/steward-run/steward/pkg/errs"
	"github.com/steward-run/steward/pkg/eventlog"
	"github.com/steward-run/steward/pkg/rpc"
	"github.com/steward-run/steward/pkg/taskstore"
)

// mayActFor refuses an authenticated caller who is neither the principal
// that created taskID nor the one its credential was issued to (the
// delegate of a sub-task): with --auth, a task's work — proposing actions,
// reporting usage, submitting artifacts, marking it produced, delegating
// from it — is done by the agent it belongs to, not by anyone holding a
// token. People steer a task through the other commands (pause, cancel,
// approvals, acceptance), each with its own rule. Unauthenticated callers
// name themselves and are trusted, as everywhere without --auth. A task
// that does not exist, or a malformed id, is left for the command itself
// to report.
func (p *Plane) mayActFor(ctx context.Context, who rpc.Identity, taskID string) error {
	if !who.Verified || !eventlog.ValidTaskID(taskID) {
		return nil
	}
	t, _, err := taskstore.Load(ctx, p.log, taskID)
	switch {
	case errs.Is(err, errs.NotFound):
		return nil
	case err != nil:
		return err
	case who.Principal == t.CreatedBy, who.Principal == t.Credential.GetCredential().GetPrincipal():
		return nil
	}
	return errs.New(errs.PermissionDenied, "%s may not act for task %s: it belongs to %s", who.Principal, taskID, owners(t.CreatedBy, t.Credential.GetCredential().GetPrincipal()))
}

// notRevoked refuses to do work for taskID once its credential, or an
// ancestor's, is revoked: a revocation is the operator's emergency stop,
// and a result handed in after it could still end the task accepted.
func (p *Plane) notRevoked(ctx context.Context, taskID, what string) error {
	t, _, err := taskstore.Load(ctx, p.log, taskID)
	if err != nil {
		return err
	}
	why, err := taskstore.Revoked(ctx, p.log, t)
	if why != "" {
		return errs.New(errs.FailedPrecondition, "task %s may not %s: %s", taskID, what, why)
	}
	return err
}

// owners names who may act for a task, once each.
func owners(creator, delegate string) string {
	if delegate == "" || delegate == creator {
		return creator
	}
	return creator + " and its delegate " + delegate
}
