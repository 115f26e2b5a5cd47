package governance

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/steward-run/steward/pkg/credential"
	"github.com/steward-run/steward/pkg/errs"
	"github.com/steward-run/steward/pkg/event"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/requestid"
	"github.com/steward-run/steward/pkg/rpc"
	"github.com/steward-run/steward/pkg/task"
)

// RenewCredential re-issues a task's credential with a later expiry, for
// who, with a reason: a task still at work when its credential runs out
// (a long task with no deadline) goes on. Only the expiry changes, never
// what the credential allows, and it stays within what bounds it: the
// credential ttl from now, the task's deadline and, for a delegated task,
// its parent's credential (renew the parent first). A task without a
// credential yet is issued one.
//
// With a request id it is idempotent under the one rule for request ids
// (pkg/requestid): the renewal is recorded under an event id derived from
// the caller and the request id, and a repeat returns the credential as
// that renewal left it, renewing nothing more; the id used for another
// command, task or reason is AlreadyExists. Without one, two renewals of
// the same credential at once record one.
func (cr *credentials) RenewCredential(ctx context.Context, who rpc.Identity, req *stewardv1.RenewCredentialRequest) (_ *stewardv1.CredentialState, err error) {
	if err := cr.checkOperatorCommand(ctx, who, req.TaskId, req.Reason, "renew"); err != nil {
		return nil, err
	}
	if err := requestid.Check(req.RequestId); err != nil {
		return nil, err
	}
	t, _, err := cr.tasks.Load(ctx, req.TaskId)
	if err != nil {
		return nil, err
	}
	r, err := requestid.Begin(ctx, cr.tasks, requestid.For(who.Tenant, who.Principal), requestid.RenewCredential, req.TaskId, req.RequestId, req, requestid.Logger(cr.logger))
	if err != nil {
		return nil, err
	}
	// A renewal refused before it recorded anything (an ended task,
	// nothing to extend) leaves the id free; one recorded keeps it.
	defer r.Settle(ctx, &err)
	id := r.EventID()
	if id != "" {
		if first, err := cr.renewedBy(ctx, req.TaskId, id); first != nil || err != nil {
			return first, err
		}
	}
	if missingCredential(t) {
		return cr.issueFirst(ctx, req.TaskId, id)
	}
	return cr.renew(ctx, who, req, t, id)
}

// issueFirst issues the credential of a task that never had one
// (missingCredential): issuing it now is the renewal, under the request's
// event id if it has one.
func (cr *credentials) issueFirst(ctx context.Context, taskID, id string) (*stewardv1.CredentialState, error) {
	if id == "" {
		id = event.ID(taskID, event.TypeCredentialIssued)
	}
	issued, why, err := cr.issueAs(ctx, taskID, id, nil, 0)
	switch {
	case err != nil:
		return nil, err
	case issued.GetCredential() == nil:
		return nil, errs.New(errs.FailedPrecondition, "task %s has no credential to renew: %s", taskID, why)
	}
	return issued.Credential, nil
}

// renew re-issues t's credential with a later expiry, recorded under the
// request's event id (id), or without one under the renewal's number, so
// that two renewals of the same credential at once record one.
func (cr *credentials) renew(ctx context.Context, who rpc.Identity, req *stewardv1.RenewCredentialRequest, t *stewardv1.Task, id string) (*stewardv1.CredentialState, error) {
	if task.Terminal(t.Status) {
		return nil, errs.New(errs.FailedPrecondition, "task %s is %s; its credential is not renewed", req.TaskId, task.StatusName(t.Status))
	}
	if why, err := cr.tasks.Revoked(ctx, t); why != "" || err != nil {
		if err == nil {
			err = errs.New(errs.FailedPrecondition, "not renewed: %s", why)
		}
		return nil, err
	}
	now := cr.now()
	cur := t.Credential
	expires, bound, chain, err := cr.renewalBound(ctx, t, now)
	if err != nil {
		return nil, err
	}
	switch {
	case !expires.After(now):
		return nil, errs.New(errs.FailedPrecondition, "credential %s cannot be renewed: it could last only until %s, which %s and has passed",
			cur.Credential.CredentialId, expires.UTC().Format(time.RFC3339), bound)
	case !expires.After(cur.Credential.ExpiresAt.AsTime()):
		return nil, errs.New(errs.FailedPrecondition, "credential %s already lasts until %s, which %s: a renewal would not extend it",
			cur.Credential.CredentialId, cur.Credential.ExpiresAt.AsTime().Format(time.RFC3339), bound)
	}
	signed, err := cr.signer.Sign(credential.Renewed(cur.Credential, now, expires))
	if err != nil {
		return nil, err
	}
	eventID := id
	if eventID == "" {
		eventID = event.ID(req.TaskId, "credential-renewal", strconv.FormatUint(uint64(cur.Renewals), 10))
	}
	t, err = cr.tasks.Update(ctx, req.TaskId, func(t *stewardv1.Task) (*stewardv1.Event, error) {
		if t.Credential.GetRenewals() != cur.Renewals {
			if id == "" {
				return nil, nil // renewed meanwhile: one renewal for both
			}
			// A request of its own is one renewal of its own: it was
			// signed for the credential as it was, so start over.
			return nil, errs.New(errs.Conflict, "credential %s was renewed by another request meanwhile; try again", cur.Credential.CredentialId)
		}
		return event.New(event.Meta{ID: eventID, TaskID: req.TaskId, Actor: &stewardv1.Actor{Principal: who.Principal, Plane: PlaneName}, CorrelationID: req.RequestId, Time: now},
			&stewardv1.CredentialIssued{Credential: signed, Chain: chain, RenewalReason: req.Reason})
	})
	if errs.Is(err, errs.Conflict) && id != "" {
		// The renewal that came first may be this request's own repeat.
		if first, ferr := cr.renewedBy(ctx, req.TaskId, id); first != nil || ferr != nil {
			return first, ferr
		}
	}
	if err != nil {
		return nil, err
	}
	cr.logger.Info("credential renewed", "task", req.TaskId, "credential", cur.Credential.CredentialId, "by", who.Principal, "expires", t.Credential.Credential.GetExpiresAt().AsTime())
	return t.Credential, nil
}

// renewedBy returns the credential as the event id on taskID left it —
// the first answer to the request that recorded it — or nil if there is
// no such event.
func (cr *credentials) renewedBy(ctx context.Context, taskID, id string) (*stewardv1.CredentialState, error) {
	recs, err := cr.log.Read(ctx, taskID)
	if err != nil {
		return nil, err
	}
	for i, r := range recs {
		if r.Event.EventId != id {
			continue
		}
		t, err := task.Fold(recs[:i+1])
		if err != nil {
			return nil, err
		}
		return t.Credential, nil
	}
	return nil, nil
}

// renewalBound returns how long t's credential may last if renewed at now,
// what bounds it (for the refusal when that is no later than now), and
// the chain to record: for a delegated task or a schedule's run, the
// credential it was delegated from as it is now, which must verify (a
// run's schedule's is renewed first if due).
func (cr *credentials) renewalBound(ctx context.Context, t *stewardv1.Task, now time.Time) (time.Time, string, []*stewardv1.SignedCredential, error) {
	parentID, runOf := t.Contract.GetParentTaskId(), t.GetScheduleRun().GetScheduleId()
	if parentID == "" && runOf == "" {
		expires, bound := now.Add(cr.ttl), fmt.Sprintf("is the credential ttl (%s) from now", cr.ttl)
		if d := t.Contract.GetDeadline(); d != nil && d.AsTime().Before(expires) {
			expires, bound = d.AsTime(), "is the task's deadline"
		}
		return expires, bound, nil, nil
	}
	ps, of, err := cr.renewalParent(ctx, t, parentID)
	if err != nil {
		return time.Time{}, "", nil, err
	}
	if _, err := credential.VerifyChain(ps.Signed, ps.Chain, cr.trustedKeys()...); err != nil {
		return time.Time{}, "", nil, errs.New(errs.FailedPrecondition, "the credential of %s does not verify: %v", of, err)
	}
	expires, bound := ps.Credential.ExpiresAt.AsTime(), fmt.Sprintf("is when the credential of %s expires (renew it first)", of)
	if d := t.Contract.GetDeadline(); d != nil && d.AsTime().Before(expires) {
		expires, bound = d.AsTime(), "is the task's deadline"
	}
	return expires, bound, append(slices.Clone(ps.Chain), ps.Signed), nil
}

// renewalParent returns the credential t's was delegated from, and whose
// it is: parent task parentID's, or, for a run, its schedule's.
func (cr *credentials) renewalParent(ctx context.Context, t *stewardv1.Task, parentID string) (*stewardv1.CredentialState, string, error) {
	if parentID == "" {
		of := "schedule " + t.ScheduleRun.ScheduleId
		ps, why, err := cr.runParent(ctx, t, nil)
		if why != "" {
			err = errs.New(errs.FailedPrecondition, "%s", why)
		}
		return ps, of, err
	}
	of := "parent task " + parentID
	parent, _, err := cr.tasks.Load(ctx, parentID)
	if err != nil {
		return nil, of, err
	}
	if parent.Credential == nil {
		return nil, of, errs.New(errs.FailedPrecondition, "parent task %s has no credential", parentID)
	}
	return parent.Credential, of, nil
}
