package governance

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/steward-run/steward/pkg/credential"
	"github.com/steward-run/steward/pkg/errs"
	"github.com/steward-run/steward/pkg/event"
	"github.com/steward-run/steward/pkg/eventlog"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/rpc"
	"github.com/steward-run/steward/pkg/task"
)

// Task credentials: governance signs one for every task when it is
// created, checks it before policy and again before every permit, and
// revokes it on an operator's word.
//
// What a check refuses:
//   - a task with no credential, or whose credential is revoked;
//   - a task whose ancestor's credential is revoked (a revocation cascades
//     down the delegation chain: it is found by walking parent_task_id
//     when the child acts, not by writing to every child);
//   - an expired credential, or one that does not cover the action's tool
//     and the scopes its tool contract requires.
//
// Compensations are checked for revocation but not for expiry or
// coverage. Undoing must stay possible after the deadline that often ended
// the task, and a compensation is never the agent's choice: Steward
// proposes it, with the compensating tool the undone action's contract
// names, for an action the credential covered when it ran. Revocation
// still stops it: it is the operator's emergency stop, and a person takes
// over what is left to undo.

// OperatorRole may revoke credentials when callers are authenticated.
const OperatorRole = "operator"

// maxDelegationDepth bounds the walk up a delegation chain, so corrupt
// data cannot make it loop.
const maxDelegationDepth = 32

// WithSigner makes the plane issue, sign and check task credentials with
// s. Without it the plane issues none and checks none.
func WithSigner(s *credential.Signer) Option { return func(p *Plane) { p.signer = s } }

// WithCredentialTTL sets how long a credential lasts when its task's
// deadline does not end it sooner; the default is credential.DefaultTTL.
func WithCredentialTTL(d time.Duration) Option {
	return func(p *Plane) {
		if d > 0 {
			p.credentialTTL = d
		}
	}
}

// issueOnCreate reacts to a new task by issuing its credential. A
// credential that cannot be issued (its parent's does not verify, or the
// contract widens it) is logged, not retried: nothing a redelivery brings
// would change that, and every action of the task is then denied saying
// why. It is idempotent: the event id derives from the task, and the fold
// takes one credential per task.
func (p *Plane) issueOnCreate(ctx context.Context, rec *stewardv1.EventRecord) error {
	if p.signer == nil {
		return nil
	}
	_, why, err := p.issue(ctx, rec.Event.TaskId, rec.Event, 0)
	if why != "" {
		p.logger.Error("no credential issued", "task", rec.Event.TaskId, "reason", why)
	}
	return err
}

// issue records taskID's credential if it has none yet, and returns the
// task after. A delegated task's parent is issued first if it has none.
// why says why no credential could be issued; err is a failure worth
// retrying.
func (p *Plane) issue(ctx context.Context, taskID string, cause *stewardv1.Event, depth int) (t *stewardv1.Task, why string, err error) {
	t, _, err = task.Load(ctx, p.log, taskID)
	if err != nil {
		if errs.Is(err, errs.NotFound) || errs.Is(err, errs.Corrupt) {
			return nil, err.Error(), nil
		}
		return nil, "", err
	}
	if t.Credential != nil || p.signer == nil {
		return t, "", nil
	}
	now := time.Now()
	var (
		cred  *stewardv1.TaskCredential
		chain []*stewardv1.SignedCredential
	)
	if parentID := t.Contract.GetParentTaskId(); parentID == "" {
		cred = credential.Root(t.Contract, t.CreatedBy, now, p.credentialTTL)
	} else {
		if depth >= maxDelegationDepth {
			return t, fmt.Sprintf("the delegation chain of task %s is deeper than %d", taskID, maxDelegationDepth), nil
		}
		parent, why, err := p.issue(ctx, parentID, cause, depth+1)
		if why != "" || err != nil {
			if why != "" {
				why = fmt.Sprintf("parent task %s: %s", parentID, why)
			}
			return t, why, err
		}
		ps := parent.Credential
		if ps == nil {
			return t, fmt.Sprintf("parent task %s has no credential", parentID), nil
		}
		// The parent's credential came from the log; check it was ours
		// and holds together before deriving from it.
		pc, err := credential.VerifyChain(ps.Signed, ps.Chain, p.signer.PublicKey())
		if err != nil {
			return t, fmt.Sprintf("the credential of parent task %s does not verify: %v", parentID, err), nil
		}
		if err := credential.Narrows(pc, t.Contract); err != nil {
			return t, fmt.Sprintf("the contract widens credential %s of parent task %s: %v", pc.CredentialId, parentID, err), nil
		}
		links := t.Contract.GetDelegationChain()
		if len(links) == 0 || links[len(links)-1].GetToRef() == "" {
			return t, fmt.Sprintf("task %s names parent %s but no delegate in its delegation_chain", taskID, parentID), nil
		}
		cred = credential.Delegated(pc, t.Contract, links[len(links)-1].ToRef, now)
		chain = append(slices.Clone(ps.Chain), ps.Signed)
	}
	signed, err := p.signer.Sign(cred)
	if err != nil {
		return nil, "", err
	}
	t, err = task.Update(ctx, p.log, taskID, func(t *stewardv1.Task) (*stewardv1.Event, error) {
		if t.Credential != nil {
			return nil, nil
		}
		return event.New(p.meta(taskID, event.ID(taskID, event.TypeCredentialIssued), cause), &stewardv1.CredentialIssued{Credential: signed, Chain: chain})
	})
	if err != nil {
		return nil, "", err
	}
	p.logger.Debug("credential issued", "task", taskID, "credential", cred.CredentialId, "expires", cred.ExpiresAt.AsTime())
	return t, "", nil
}

// ensureCredential returns t with its credential, issuing it now if the
// action came before it (a task created before credentials existed, or a
// missed reaction). why says why there is none.
func (p *Plane) ensureCredential(ctx context.Context, t *stewardv1.Task, cause *stewardv1.Event) (*stewardv1.Task, string, error) {
	if p.signer == nil || t.Credential != nil {
		return t, "", nil
	}
	issued, why, err := p.issue(ctx, t.Contract.GetTaskId(), cause, 0)
	if err != nil || why != "" {
		return t, why, err
	}
	return issued, "", nil
}

// credentialRefusal says why action a of t may not be permitted under t's
// credential now, or "" when it may (see the top of this file). err is a
// failure to find out, worth retrying.
func (p *Plane) credentialRefusal(ctx context.Context, t *stewardv1.Task, a *stewardv1.Action) (string, error) {
	if p.signer == nil {
		return "", nil
	}
	if t.Credential == nil {
		return fmt.Sprintf("task %s has no credential", t.Contract.GetTaskId()), nil
	}
	if why, err := p.revoked(ctx, t); why != "" || err != nil {
		return why, err
	}
	if a.GetCompensates() != "" {
		return "", nil
	}
	entry, err := p.tools.Lookup(ctx, p.log, a.Tool, a.ToolVersion)
	if err != nil {
		if errs.Is(err, errs.NotFound) {
			return fmt.Sprintf("credential %s cannot be checked: %v", t.Credential.Credential.GetCredentialId(), err), nil
		}
		return "", err
	}
	if err := credential.Covers(t.Credential.GetCredential(), a.Tool, entry.Tool.Contract.GetRequiredScopes(), time.Now()); err != nil {
		return err.Error(), nil
	}
	return "", nil
}

// revoked says why t's credential no longer stands because it, or an
// ancestor's, was revoked; "" when none was.
func (p *Plane) revoked(ctx context.Context, t *stewardv1.Task) (string, error) {
	taskID := t.Contract.GetTaskId()
	cs := t.Credential
	if cs.GetRevoked() {
		return revokedReason(cs, taskID, ""), nil
	}
	child := taskID
	for depth, parentID := 0, t.Contract.GetParentTaskId(); parentID != ""; depth++ {
		if depth >= maxDelegationDepth {
			return fmt.Sprintf("the delegation chain of task %s is deeper than %d", taskID, maxDelegationDepth), nil
		}
		parent, _, err := task.Load(ctx, p.log, parentID)
		switch {
		case errs.Is(err, errs.NotFound):
			return fmt.Sprintf("task %s was delegated from task %s, which is not found", child, parentID), nil
		case err != nil:
			return "", err
		case parent.Credential.GetRevoked():
			return revokedReason(parent.Credential, parentID, cs.Credential.GetCredentialId()), nil
		}
		child, parentID = parentID, parent.Contract.GetParentTaskId()
	}
	return "", nil
}

// revokedReason is the reason given for an action refused because cs (of
// taskID) was revoked; own is the acting task's credential when cs is an
// ancestor's.
func revokedReason(cs *stewardv1.CredentialState, taskID, own string) string {
	c := cs.Credential.GetCredentialId()
	why := fmt.Sprintf("credential revoked: %s", cs.RevokedReason)
	if own != "" {
		return fmt.Sprintf("%s (credential %s of ancestor task %s was revoked by %s, and with it credential %s delegated from it)", why, c, taskID, cs.RevokedBy, own)
	}
	return fmt.Sprintf("%s (credential %s of task %s was revoked by %s)", why, c, taskID, cs.RevokedBy)
}

// MaxRevokeReasonLen bounds a revocation's reason.
const MaxRevokeReasonLen = 1024

// RevokeCredential revokes a task's credential for who, with a reason:
// nothing more is permitted to the task or to any task delegated from it,
// and its open approvals are closed (closeApprovals). Revoking a revoked
// credential returns it unchanged. A task without a credential yet gets
// one first, so that it can be revoked.
func (p *Plane) RevokeCredential(ctx context.Context, who rpc.Identity, req *stewardv1.RevokeCredentialRequest) (*stewardv1.CredentialState, error) {
	switch {
	case req.TaskId == "":
		return nil, errs.Field("task_id", "is required")
	case !eventlog.ValidTaskID(req.TaskId):
		return nil, errs.Field("task_id", "%q is not a task id", req.TaskId)
	case req.Reason == "":
		return nil, errs.Field("reason", "is required: say why the credential is revoked")
	case len(req.Reason) > MaxRevokeReasonLen:
		return nil, &errs.Error{Code: errs.TooLarge, Field: "reason", Message: fmt.Sprintf("is longer than %d bytes", MaxRevokeReasonLen)}
	case who.Verified && !who.HasRole(OperatorRole):
		return nil, errs.New(errs.PermissionDenied, "%s may not revoke credentials: that needs the %s role", who.Principal, OperatorRole)
	}
	if p.signer == nil {
		return nil, errs.New(errs.FailedPrecondition, "this governance plane issues no credentials")
	}
	if _, _, err := task.Load(ctx, p.log, req.TaskId); err != nil {
		return nil, err
	}
	_, why, err := p.issue(ctx, req.TaskId, nil, 0)
	if err != nil {
		return nil, err
	}
	t, err := task.Update(ctx, p.log, req.TaskId, func(t *stewardv1.Task) (*stewardv1.Event, error) {
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
		}, &stewardv1.CredentialRevoked{CredentialId: id, Reason: req.Reason})
	})
	if err != nil {
		return nil, err
	}
	return t.Credential, nil
}

// closeApprovals reacts to a revocation: every action still awaiting
// approval under the revoked credential, or under one delegated from it,
// is denied, so that nobody approves what could not be permitted. An
// approval given meanwhile meets the same check before its permit. It is
// idempotent: a denial's id derives from its action, and an action no
// longer awaiting approval is left alone.
func (p *Plane) closeApprovals(ctx context.Context, rec *stewardv1.EventRecord) error {
	if p.signer == nil {
		return nil
	}
	if err := p.approvals.Sync(ctx, p.log); err != nil {
		return err
	}
	for _, ap := range p.approvals.List("", true) {
		t, _, err := task.Load(ctx, p.log, ap.TaskId)
		if err != nil {
			return err
		}
		a := task.FindAction(t, ap.ActionId)
		if a.GetStatus() != stewardv1.ActionStatus_ACTION_STATUS_AWAITING_APPROVAL {
			continue
		}
		why, err := p.revoked(ctx, t)
		if err != nil {
			return err
		}
		if why == "" {
			continue
		}
		if err := p.deny(ctx, ap.TaskId, a, []string{why}, rec.Event); err != nil {
			return err
		}
	}
	return nil
}

// CredentialKey returns the public key credentials are signed with and its
// id.
func (p *Plane) CredentialKey() (*stewardv1.GetCredentialKeyResponse, error) {
	if p.signer == nil {
		return nil, errs.New(errs.FailedPrecondition, "this governance plane issues no credentials")
	}
	return &stewardv1.GetCredentialKeyResponse{PublicKey: p.signer.PublicKey(), KeyId: p.signer.KeyID()}, nil
}
