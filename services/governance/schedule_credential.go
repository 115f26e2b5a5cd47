package governance

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/steward-run/steward/pkg/access"
	"github.com/steward-run/steward/pkg/credential"
	"github.com/steward-run/steward/pkg/errs"
	"github.com/steward-run/steward/pkg/event"
	"github.com/steward-run/steward/pkg/eventlog"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/rpc"
	"github.com/steward-run/steward/pkg/schedule"
)

// A schedule's credential (docs/schedules.md, "Credential"): issued for
// its creator when it is created, bounded by its template contract; each
// run's credential is delegated from it. It is renewed when a run needs
// it — a run's credential issued or renewed — and it is past two thirds
// of its life: a schedule that fires less often than its credential lasts
// still works, since a firing renews it before its run's is delegated,
// and an idle schedule costs no timer. A revocation (revoke.go) stops the
// schedule and, through RevokedAbove, every run delegated from it.

// maxScheduleTries bounds the conditional writes to one schedule's chain
// that lose to another writer before giving up (the event is redelivered).
const maxScheduleTries = 8

// issueOnSchedule reacts to a new schedule by issuing its credential. It
// is idempotent: the event id derives from the schedule, and the fold
// takes one issue.
func (cr *credentials) issueOnSchedule(ctx context.Context, rec *stewardv1.EventRecord) error {
	if cr.signer == nil {
		return nil
	}
	_, why, err := cr.scheduleCredential(ctx, rec.Event.TaskId, rec.Event, false)
	if why != "" {
		cr.logger.Error("no schedule credential issued", "schedule", rec.Event.TaskId, "reason", why)
	}
	return err
}

// scheduleCredential returns schedule id's credential as it stands now,
// issuing it if it has none and, with renew, renewing it if it is due
// (schedule.RenewDue) and the schedule active. why says why there is none
// to delegate from: a revoked credential is returned with one too. err is
// a failure worth retrying.
func (cr *credentials) scheduleCredential(ctx context.Context, id string, cause *stewardv1.Event, renew bool) (_ *stewardv1.CredentialState, why string, _ error) {
	for range maxScheduleTries {
		recs, err := cr.log.ReadSchedule(ctx, id)
		if err != nil {
			return nil, "", err
		}
		if len(recs) == 0 {
			return nil, fmt.Sprintf("schedule %s is not found", id), nil
		}
		s, err := schedule.Fold(recs)
		if err != nil {
			return nil, fmt.Sprintf("schedule %s does not fold: %v", id, err), nil
		}
		ev, err := cr.scheduleCredentialEvent(s, cause, renew)
		switch {
		case err != nil:
			return nil, "", err
		case ev == nil && s.Credential.GetRevoked():
			cs := s.Credential
			return cs, fmt.Sprintf("credential %s of schedule %s was revoked by %s: %s", cs.Credential.GetCredentialId(), id, cs.RevokedBy, cs.RevokedReason), nil
		case ev == nil && s.Credential == nil:
			return nil, fmt.Sprintf("schedule %s was deleted before its credential was issued", id), nil
		case ev == nil:
			return s.Credential, "", nil
		}
		last := recs[len(recs)-1]
		if _, err := cr.log.Append(ctx, eventlog.Head{Sequence: last.Sequence, Hash: last.Event.Hash}, ev); err != nil && !errors.Is(err, eventlog.ErrConflict) {
			return nil, "", err
		}
	}
	return nil, "", errs.New(errs.Conflict, "schedule %s kept changing while its credential was issued", id)
}

// scheduleCredentialEvent returns the event that issues or renews s's
// credential now, or nil when it needs neither. Signing happens here,
// before the conditional write.
func (cr *credentials) scheduleCredentialEvent(s *stewardv1.Schedule, cause *stewardv1.Event, renew bool) (*stewardv1.Event, error) {
	now, cs := cr.now(), s.Credential
	var (
		c      *stewardv1.TaskCredential
		id     = event.ID(s.ScheduleId, event.TypeScheduleCredentialIssued)
		reason string
	)
	switch {
	case cs == nil:
		if s.Status == stewardv1.ScheduleStatus_SCHEDULE_STATUS_DELETED {
			return nil, nil
		}
		c = schedule.Credential(s, now, cr.ttl)
	case cs.Revoked || !renew || s.Status != stewardv1.ScheduleStatus_SCHEDULE_STATUS_ACTIVE || !schedule.RenewDue(cs, now):
		return nil, nil
	default:
		expires := now.Add(cr.ttl)
		if !expires.After(cs.Credential.GetExpiresAt().AsTime()) {
			return nil, nil // a shorter ttl since: it lasts as it is
		}
		c = credential.Renewed(cs.Credential, now, expires)
		id = event.ID(s.ScheduleId, "schedule-credential-renewal", strconv.FormatUint(uint64(cs.Renewals), 10))
		reason = "renewed as the schedule runs"
	}
	signed, err := cr.signer.Sign(c)
	if err != nil {
		return nil, err
	}
	return event.New(cr.meta(s.ScheduleId, id, cause), &stewardv1.ScheduleCredentialIssued{Credential: signed, RenewalReason: reason})
}

// runParent returns the credential run t's is delegated from: its
// schedule's, renewed first if due. why says why there is none.
func (cr *credentials) runParent(ctx context.Context, t *stewardv1.Task, cause *stewardv1.Event) (*stewardv1.CredentialState, string, error) {
	id := t.GetScheduleRun().GetScheduleId()
	cs, why, err := cr.scheduleCredential(ctx, id, cause, true)
	if why != "" || err != nil {
		return nil, why, err
	}
	if cs == nil {
		return nil, fmt.Sprintf("schedule %s has no credential", id), nil
	}
	return cs, "", nil
}

// revokeSchedule revokes the credential of the schedule req names, for
// who: its creator or an operator; another tenant's schedule is not found.
// The schedule stops (REVOKED) and no run delegated from it may act
// further (RevokedAbove). Revoking a revoked credential returns it
// unchanged; a schedule whose credential was not issued yet gets it first.
func (cr *credentials) revokeSchedule(ctx context.Context, who rpc.Identity, req *stewardv1.RevokeCredentialRequest) (*stewardv1.CredentialState, error) {
	id := req.ScheduleId
	if !eventlog.ValidTaskID(id) {
		return nil, errs.Field("schedule_id", "%s is not a schedule id: "+eventlog.TaskIDRule, errs.Quote(id))
	}
	if err := cr.checkReason(req.Reason, "revoke"); err != nil {
		return nil, err
	}
	for range maxScheduleTries {
		recs, err := cr.log.ReadSchedule(ctx, id)
		if err != nil {
			return nil, err
		}
		s, err := schedule.Fold(recs)
		if errs.Is(err, errs.NotFound) || err == nil && s.Tenant != who.Tenant {
			return nil, errs.New(errs.NotFound, "schedule %s not found", errs.Quote(id))
		}
		if err != nil {
			return nil, err
		}
		if who.Principal != s.Creator && !who.HasRole(access.Operator) {
			return nil, errs.New(errs.PermissionDenied, "%s may not revoke the credential of schedule %s: only its creator or an operator", errs.Quote(who.Principal), id)
		}
		cs := s.Credential
		switch {
		case cs == nil:
			if _, why, err := cr.scheduleCredential(ctx, id, nil, false); err != nil || why != "" {
				if why != "" {
					err = errs.New(errs.FailedPrecondition, "schedule %s has no credential to revoke: %s", id, why)
				}
				return nil, err
			}
			continue
		case cs.Revoked:
			return cs, nil
		}
		credID := cs.Credential.GetCredentialId()
		ev, err := event.New(event.Meta{
			ID: event.ID(id, event.TypeScheduleCredentialRevoked, credID), TaskID: id,
			Actor: &stewardv1.Actor{Principal: who.Principal, Plane: PlaneName}, Time: cr.now(),
		}, &stewardv1.ScheduleCredentialRevoked{CredentialId: credID, Reason: req.Reason})
		if err != nil {
			return nil, err
		}
		last := recs[len(recs)-1]
		rec, err := cr.log.Append(ctx, eventlog.Head{Sequence: last.Sequence, Hash: last.Event.Hash}, ev)
		if errors.Is(err, eventlog.ErrConflict) {
			continue
		}
		if err != nil {
			return nil, err
		}
		if err := schedule.Apply(s, rec.Event, rec.Sequence); err != nil {
			return nil, err
		}
		cr.logger.Info("schedule credential revoked", "schedule", id, "credential", credID, "by", who.Principal)
		return s.Credential, nil
	}
	return nil, errs.New(errs.Conflict, "schedule %s kept changing while its credential was revoked; try again", id)
}
