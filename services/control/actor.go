package control

import (
	"context"

	"github.com/steward-run/steward/pkg/access"
	"github.com/steward-run/steward/pkg/errs"
	"github.com/steward-run/steward/pkg/eventlog"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// Parties returns who plays each part in task taskID, for the role table's
// party rules (access.Table), which the RPC edge applies to authenticated
// callers: its agents are the principal that created it and the one its
// credential was issued to (the delegate of a sub-task), who do its work;
// its owners are the contract's requester and accountable owner, whom it
// is for; its backup is the contract's input_backup_ref. A task that does not exist is NotFound and a malformed id
// Invalid: the edge answers the first itself and leaves the second to the
// command, which names the field.
func (p *Plane) Parties(ctx context.Context, taskID string) (access.TaskParties, error) {
	if !eventlog.ValidTaskID(taskID) {
		return access.TaskParties{}, errs.Field("task_id", "is not a task id")
	}
	// The parties are fixed once the task has its credential: the fold
	// this process keeps answers without a read of the log, which every
	// call by an agent would otherwise cost. Before that, read what is new.
	var out access.TaskParties
	var final bool
	look := func(t *stewardv1.Task) {
		k := t.Contract
		out = access.TaskParties{
			Agents: []string{t.CreatedBy, t.Credential.GetCredential().GetPrincipal()},
			Owners: []string{k.GetRequesterRef(), k.GetAccountableOwnerRef()},
			Backup: k.GetInputBackupRef(),
		}
		final = t.Credential != nil
	}
	if err := p.tasks.Peek(ctx, taskID, 0, look); err != nil || final {
		return out, err
	}
	t, _, err := p.tasks.Load(ctx, taskID)
	if err != nil {
		return access.TaskParties{}, err
	}
	look(t)
	return out, nil
}

// notRevoked refuses to do work for taskID once its credential, or an
// ancestor's, is revoked: a revocation is the operator's emergency stop,
// and a result handed in after it could still end the task accepted.
func (p *Plane) notRevoked(ctx context.Context, taskID, what string) error {
	t, _, err := p.tasks.Load(ctx, taskID)
	if err != nil {
		return err
	}
	why, err := p.tasks.Revoked(ctx, t)
	if why != "" {
		return errs.New(errs.FailedPrecondition, "task %s may not %s: %s", taskID, what, why)
	}
	return err
}
