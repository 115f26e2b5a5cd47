package taskstore

import (
	"context"
	"fmt"

	"github.com/steward-run/steward/pkg/errs"
	"github.com/steward-run/steward/pkg/event"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// MaxChainWalk bounds the walk up a delegation chain, so that a corrupt
// or cyclic chain cannot hold a caller forever.
const MaxChainWalk = 32

// Revoked says why t may no longer act because its credential, or the
// credential of a task it was delegated from, however far up, was revoked;
// "" when none was. A revocation is recorded on the revoked task's own
// log, so a sub-task's fold does not see its ancestors'; this walk is how
// governance (before a permit) and execution (before a call) find them.
// err is a failure to read, worth retrying.
func (s *Store) Revoked(ctx context.Context, t *stewardv1.Task) (string, error) {
	if t.Credential.GetRevoked() {
		return RevocationReason(t, nil), nil
	}
	r, err := s.RevokedAbove(ctx, t)
	if err != nil {
		return "", err
	}
	return RevocationReason(t, r), nil
}

// RevocationReason is Revoked without the reading: why t may no longer
// act, given above, what RevokedAbove found for it (nil for nothing).
func RevocationReason(t *stewardv1.Task, above *Revocation) string {
	switch {
	case t.Credential.GetRevoked():
		return revokedReason(t.Credential, t.Contract.GetTaskId(), "")
	case above == nil:
		return ""
	case above.Why != "":
		return above.Why
	}
	if above.Schedule {
		cs := above.Credential
		return fmt.Sprintf("credential revoked: %s (credential %s of schedule %s was revoked by %s, and with it every run's delegated from it)",
			cs.RevokedReason, cs.GetCredential().GetCredentialId(), above.TaskID, cs.RevokedBy)
	}
	return revokedReason(above.Credential, above.TaskID, t.Credential.GetCredential().GetCredentialId())
}

// Revocation is a revoked credential found above a task, or why the walk
// up could not go on.
type Revocation struct {
	// TaskID is the ancestor whose Credential is revoked.
	TaskID     string
	Credential *stewardv1.CredentialState
	// Why is set instead when the chain is broken (an ancestor missing,
	// or a chain deeper than MaxChainWalk): nothing may act under it.
	Why string
	// Schedule says that TaskID is a schedule, the chain's root a run of
	// it; Credential then holds the revocation and the credential's id.
	Schedule bool
}

// RevokedAbove walks up t's delegation chain and returns the first
// ancestor whose credential is revoked, or nil when none is. Above the
// chain's root, when it is a schedule's run, is the schedule's credential,
// which the run's was delegated from (docs/schedules.md, "Credential").
func (s *Store) RevokedAbove(ctx context.Context, t *stewardv1.Task) (*Revocation, error) {
	taskID := t.Contract.GetTaskId()
	child, root := taskID, t
	for depth, parentID := 0, t.Contract.GetParentTaskId(); parentID != ""; depth++ {
		if depth >= MaxChainWalk {
			return &Revocation{Why: fmt.Sprintf("the delegation chain of task %s is deeper than %d", taskID, MaxChainWalk)}, nil
		}
		parent, _, err := s.Load(ctx, parentID)
		switch {
		case errs.Is(err, errs.NotFound):
			return &Revocation{Why: fmt.Sprintf("task %s was delegated from task %s, which is not found", child, parentID)}, nil
		case err != nil:
			return nil, err
		case parent.Credential.GetRevoked():
			return &Revocation{TaskID: parentID, Credential: parent.Credential}, nil
		}
		child, parentID, root = parentID, parent.Contract.GetParentTaskId(), parent
	}
	return s.scheduleRevoked(ctx, root)
}

// scheduleRevoked returns the revocation of the credential of the
// schedule root is a run of, or nil when it is no run or its schedule's
// credential stands. It reads the one revocation a schedule may have,
// not the schedule's chain, which grows with every firing.
func (s *Store) scheduleRevoked(ctx context.Context, root *stewardv1.Task) (*Revocation, error) {
	id := root.GetScheduleRun().GetScheduleId()
	if id == "" {
		return nil, nil
	}
	recs, err := s.log.ReadScheduleEvents(ctx, id, event.TypeScheduleCredentialRevoked)
	if err != nil || len(recs) == 0 {
		return nil, err
	}
	ev := recs[0].Event
	r := ev.GetScheduleCredentialRevoked()
	if r == nil || ev.GetActor().GetPlane() != event.Owner(ev.Type) {
		return nil, errs.New(errs.Corrupt, "schedule %s: event %s is not its credential's revocation by its owner", id, ev.EventId)
	}
	return &Revocation{TaskID: id, Schedule: true, Credential: &stewardv1.CredentialState{
		Credential: &stewardv1.TaskCredential{CredentialId: r.CredentialId, TaskId: id},
		Revoked:    true, RevokedReason: r.Reason, RevokedBy: ev.GetActor().GetPrincipal(), RevokedAt: ev.Time,
	}}, nil
}

// revokedReason is the reason given for refusing to act because cs (of
// taskID) was revoked; own is the acting task's credential when cs is an
// ancestor's.
func revokedReason(cs *stewardv1.CredentialState, taskID, own string) string {
	c := cs.GetCredential().GetCredentialId()
	why := fmt.Sprintf("credential revoked: %s", cs.RevokedReason)
	if own != "" {
		return fmt.Sprintf("%s (credential %s of ancestor task %s was revoked by %s, and with it credential %s delegated from it)", why, c, taskID, cs.RevokedBy, own)
	}
	return fmt.Sprintf("%s (credential %s of task %s was revoked by %s)", why, c, taskID, cs.RevokedBy)
}
