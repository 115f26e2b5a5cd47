package schedule

import (
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/steward-run/steward/pkg/credential"
	"github.com/steward-run/steward/pkg/errs"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/task"
)

// A schedule's credential (docs/schedules.md, "Credential"): governance
// issues it for the creator when the schedule is created, bounded by the
// template contract, renews it as the schedule runs and revokes it on the
// word of the creator or an operator. Each run's credential is delegated
// from it, so revoking it stops every run, as revoking a parent task's
// stops its sub-tasks. The fold keeps what the log says; the signature is
// checked by whoever relies on it (governance, an auditor), as a task's.

// Credential returns the credential of schedule s, bounded by its template
// contract, for its creator, from now until ttl after it. Its task id is
// the schedule's: the chain a run's credential names as its parent.
func Credential(s *stewardv1.Schedule, now time.Time, ttl time.Duration) *stewardv1.TaskCredential {
	c := proto.CloneOf(s.GetTemplate().GetContract())
	c.TaskId, c.Deadline = s.ScheduleId, nil // a run's deadline is its own
	return credential.Root(c, s.Creator, now, ttl)
}

// RenewDue reports whether s's credential should be renewed at now before
// a run's is delegated from it: it is past two thirds of its life, so a
// run delegated from it would get less than a third of the ttl.
func RenewDue(cs *stewardv1.CredentialState, now time.Time) bool {
	c := cs.GetCredential()
	if c.GetExpiresAt() == nil || c.GetIssuedAt() == nil {
		return false
	}
	issued, expires := c.IssuedAt.AsTime(), c.ExpiresAt.AsTime()
	return !now.Before(issued.Add(expires.Sub(issued) * 2 / 3))
}

// credentialIssued folds an issue or a renewal of s's credential.
func credentialIssued(s *stewardv1.Schedule, ci *stewardv1.ScheduleCredentialIssued) error {
	c, err := task.DecodeCredential(ci.Credential)
	if err != nil {
		return err
	}
	cur := s.Credential
	switch {
	case c.TaskId != s.ScheduleId:
		return errs.New(errs.FailedPrecondition, "credential %s is for %s, not schedule %s", c.CredentialId, c.TaskId, s.ScheduleId)
	case cur == nil && ci.RenewalReason != "":
		return errs.New(errs.FailedPrecondition, "schedule %s has no credential to renew", s.ScheduleId)
	case cur != nil && ci.RenewalReason == "":
		return errs.New(errs.FailedPrecondition, "schedule %s already has credential %s", s.ScheduleId, cur.Credential.GetCredentialId())
	case cur.GetRevoked():
		return errs.New(errs.FailedPrecondition, "credential %s is revoked and is not renewed", cur.Credential.GetCredentialId())
	case cur != nil && s.Status != stewardv1.ScheduleStatus_SCHEDULE_STATUS_ACTIVE:
		// Governance renews only an active schedule's, at its head.
		return errs.New(errs.FailedPrecondition, "schedule %s is %s; its credential is not renewed", s.ScheduleId, StatusName(s.Status))
	}
	if cur != nil {
		if err := credential.RenewalOf(cur.Credential, c); err != nil {
			return err
		}
	}
	s.Credential = &stewardv1.CredentialState{Credential: c, Signed: ci.Credential, Renewals: cur.GetRenewals()}
	if cur != nil {
		s.Credential.Renewals++
	}
	return nil
}

// credentialRevoked folds the revocation of s's credential: the schedule
// stops (REVOKED) unless it was deleted.
func credentialRevoked(s *stewardv1.Schedule, ev *stewardv1.Event, r *stewardv1.ScheduleCredentialRevoked) error {
	switch cur := s.Credential; {
	case cur == nil:
		return errs.New(errs.FailedPrecondition, "schedule %s has no credential to revoke", s.ScheduleId)
	case cur.Credential.GetCredentialId() != r.CredentialId:
		return errs.New(errs.FailedPrecondition, "schedule %s's credential is %s, not %s", s.ScheduleId, cur.Credential.GetCredentialId(), r.CredentialId)
	case cur.Revoked:
		return errs.New(errs.FailedPrecondition, "credential %s is already revoked", r.CredentialId)
	}
	c := proto.CloneOf(s.Credential)
	c.Revoked, c.RevokedReason, c.RevokedBy, c.RevokedAt = true, r.Reason, ev.GetActor().GetPrincipal(), ev.Time
	s.Credential = c
	if s.Status != stewardv1.ScheduleStatus_SCHEDULE_STATUS_DELETED {
		s.Status = stewardv1.ScheduleStatus_SCHEDULE_STATUS_REVOKED
	}
	s.Queued = nil // a queued firing starts no run under a revoked credential
	return nil
}
