package audit

import (
	"crypto/ed25519"
	"fmt"

	"github.com/steward-run/steward/pkg/credential"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/task"
)

// WithDecisions makes the replayer check, offline, the signature of every
// permit (ActionPermitted), approval decision (ApprovalDecided), policy
// snapshot (PolicyEvaluated, PlanEvaluated) and approval request
// (ApprovalRequested) against trusted, the keys governance signs with:
// each must be signed by one of them, over exactly the fields recorded
// beside it, and a permit must name the action, id and hash, it was
// recorded for, and the snapshot it was decided under by its hash. The first that does not hold — an unsigned one included,
// which is either recorded before these were signed or forged — breaks
// the replay there. With
// no trusted keys it checks nothing: a signature checked against the key
// it carries proves nothing about who wrote it.
func WithDecisions(trusted ...ed25519.PublicKey) Option {
	return func(r *Replayer) {
		r.decisionKeys = trusted
	}
}

// DecisionChecks counts the signatures verified during a replay
// (WithDecisions).
type DecisionChecks struct {
	Permits   int
	Approvals int
	// Snapshots counts policy snapshots, of actions and of plan
	// versions; Requests, approval requests.
	Snapshots int
	Requests  int
}

// checkDecision verifies ev's signature if it is a permit or an approval
// decision, against the task as folded before it.
func (r *Replayer) checkDecision(ev *stewardv1.Event) error {
	switch {
	case ev.GetActionPermitted() != nil:
		pm := ev.GetActionPermitted()
		id := pm.GetPermit().GetActionId()
		a := task.FindAction(&r.task, id)
		if _, err := credential.VerifyPermit(pm.GetPermit(), pm.GetSigned(), id, a.GetActionHash(), r.decisionKeys...); err != nil {
			return fmt.Errorf("permit of action %s does not hold: %v", id, err)
		}
		if err := snapshotBound(pm, a); err != nil {
			return err
		}
		r.decisions.Permits++
	case ev.GetApprovalDecided() != nil:
		d := ev.GetApprovalDecided()
		if err := credential.VerifyDecision(d, r.decisionKeys...); err != nil {
			return fmt.Errorf("approval decision on action %s does not hold: %v", d.ActionId, err)
		}
		r.decisions.Approvals++
	case ev.GetPolicyEvaluated() != nil:
		if err := credential.VerifyEvent(ev.GetPolicyEvaluated(), r.decisionKeys...); err != nil {
			return fmt.Errorf("policy snapshot of action %s does not hold: %v", ev.GetPolicyEvaluated().ActionId, err)
		}
		r.decisions.Snapshots++
	case ev.GetPlanEvaluated() != nil:
		if err := credential.VerifyEvent(ev.GetPlanEvaluated(), r.decisionKeys...); err != nil {
			return fmt.Errorf("policy snapshot of plan version %d does not hold: %v", ev.GetPlanEvaluated().Version, err)
		}
		r.decisions.Snapshots++
	case ev.GetApprovalRequested() != nil:
		if err := credential.VerifyEvent(ev.GetApprovalRequested(), r.decisionKeys...); err != nil {
			return fmt.Errorf("approval request %s does not hold: %v", ev.GetApprovalRequested().GetApproval().GetApprovalId(), err)
		}
		r.decisions.Requests++
	}
	return nil
}

// snapshotBound checks that the snapshot permit pm was decided under —
// carried beside it, or else action a's, recorded before — is the one
// whose hash its signed permit names (unless UnboundSnapshot).
func snapshotBound(pm *stewardv1.ActionPermitted, a *stewardv1.Action) error {
	p := pm.GetPermit()
	if UnboundSnapshot(p) {
		return nil
	}
	snap := pm.GetSnapshot()
	if snap == nil {
		snap = a.GetSnapshot()
	}
	if got := credential.SnapshotHash(snap); got != p.SnapshotHash {
		return fmt.Errorf("permit of action %s was signed for a snapshot hashing to %s; snapshot %s recorded with it hashes to %s", p.ActionId, p.SnapshotHash, snap.GetSnapshotId(), got)
	}
	return nil
}
