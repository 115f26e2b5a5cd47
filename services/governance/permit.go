package governance

import (
	"context"
	"fmt"

	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/steward-run/steward/pkg/crashpoint"
	"github.com/steward-run/steward/pkg/credential"
	"github.com/steward-run/steward/pkg/event"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/task"
)

// permit issues the action's one permit. t is the task as the caller
// last read or wrote it, and is the permit's to write on (UpdateFrom).
func (p *Plane) permit(ctx context.Context, t *stewardv1.Task, a *stewardv1.Action, cause *stewardv1.Event) error {
	taskID := t.Contract.TaskId
	// An approval of an action proposed before the task had a credential
	// needs one now; if none can be issued, the check below says so.
	if _, _, err := p.credentials.ensureCredential(ctx, t, cause); err != nil {
		return err
	}
	cost, check, err := p.readForDecision(ctx, t, a)
	if err != nil {
		return err
	}
	_, err = p.tasks.UpdateFrom(ctx, t, func(t *stewardv1.Task) (*stewardv1.Event, error) {
		cur := task.FindAction(t, a.ActionId)
		if moved(cur, a) {
			return nil, nil
		}
		if why := p.permitRefusal(t, cur, check); why != "" {
			return event.New(p.meta(taskID, event.ID(a.ActionId, event.TypeActionDenied), cause), &stewardv1.ActionDenied{
				ActionId: a.ActionId, SnapshotId: cur.Snapshot.GetSnapshotId(), Reasons: []string{why}, CostMicros: cost,
			})
		}
		prev := cur.Permit.GetPermitId()
		pm, err := p.permitted(t, cur, nil)
		if err != nil {
			return nil, err
		}
		return event.New(p.meta(taskID, keyedBy(a.ActionId, event.TypeActionPermitted, prev), cause), pm)
	})
	if err == nil {
		crashpoint.Here(crashpoint.AfterPermit)
	}
	return err
}

// permitRefusal says why cur of t may not get its permit now, or "" when
// it may: what every write that issues a permit checks, on the task as it
// is when the permit is appended, with check read before.
func (p *Plane) permitRefusal(t *stewardv1.Task, cur *stewardv1.Action, check credentialCheck) string {
	// A paused task still gets its permit: execution holds it until the
	// task resumes. An ended task gets none, nor does a compensating task
	// for anything but a compensation.
	// Nor does a task whose budget is spent, for anything but a
	// compensation (undoing is never held back for money): the budget
	// guard suspends it (budget.go).
	if line, spent := task.Spent(t); spent && cur.Compensates == "" && task.MayPermit(t, cur) {
		return budgetSpentReason(line)
	}
	if !task.MayPermit(t, cur) {
		return fmt.Sprintf("the task is %s", task.StatusName(t.Status))
	}
	// Nor does an action the task's plan no longer asks for: a revision
	// withdrew its step (or left it to none), or policy denied the plan.
	if why := task.PlanWithdrew(t, cur); why != "" {
		return why
	}
	// Checked here, on the task as it is when the permit is appended, so
	// that a revocation or an expiry since the proposal (or during a long
	// wait for approval) stops the permit.
	return p.credentials.refuseCredential(t, cur, check)
}

// newPermit is the permit for cur of t, decided under the snapshot
// snap, which it names by id and by hash. Its id is keyed by the permit it
// replaces, if any.
func (p *Plane) newPermit(t *stewardv1.Task, cur *stewardv1.Action, snap *stewardv1.PolicySnapshot) *stewardv1.ActionPermit {
	credentialRef := t.Contract.GetCredentialRef()
	if c := t.Credential.GetCredential(); c != nil {
		credentialRef = c.CredentialId
	}
	issued := p.now()
	return &stewardv1.ActionPermit{
		PermitId:      permitID(cur.ActionId, cur.Permit.GetPermitId()),
		ActionId:      cur.ActionId,
		ActionHash:    cur.ActionHash,
		RequestHash:   cur.RequestHash,
		SnapshotId:    snap.GetSnapshotId(),
		CredentialRef: credentialRef,
		IssuedAt:      timestamppb.New(issued),
		ExpiresAt:     timestamppb.New(issued.Add(p.permitTTL)),
		SnapshotHash:  credential.SnapshotHash(snap),
	}
}

// permitted is the event that issues cur of t its permit, decided under
// snap, carried along, or with snap nil under the action's snapshot,
// recorded before; signed with the credential key when the plane has one.
// Signing is pure (Ed25519 signatures are deterministic), so a retried
// write signs the same bytes.
func (p *Plane) permitted(t *stewardv1.Task, cur *stewardv1.Action, snap *stewardv1.PolicySnapshot) (*stewardv1.ActionPermitted, error) {
	decided := snap
	if decided == nil {
		decided = cur.Snapshot
	}
	pm := &stewardv1.ActionPermitted{Permit: p.newPermit(t, cur, decided), Snapshot: snap}
	if p.signer == nil {
		return pm, nil
	}
	signed, err := p.signer.SignPermit(pm.Permit)
	if err != nil {
		return nil, err
	}
	pm.Signed = signed
	return pm, nil
}

// readForDecision reads, before the write that decides on a, what that
// write weighs: the cost of the calls a made, and the task's credential
// chain.
func (p *Plane) readForDecision(ctx context.Context, t *stewardv1.Task, a *stewardv1.Action) (int64, credentialCheck, error) {
	cost, err := p.callsCost(ctx, t.Contract.TaskId, a)
	if err != nil {
		return 0, credentialCheck{}, err
	}
	check, err := p.credentials.readCredentialCheck(ctx, t, a)
	return cost, check, err
}

// moved reports whether the action is no longer where a decision on a
// was made: another status, or another permit.
func moved(cur, a *stewardv1.Action) bool {
	return cur.GetStatus() != a.Status || cur.Permit.GetPermitId() != a.Permit.GetPermitId()
}
