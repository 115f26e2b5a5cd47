package governance

import (
	"github.com/steward-run/steward/pkg/credential"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// signed is m signed with this plane's key, when it has one: so that an
// audit, and this plane before it acts on a snapshot or an approval it
// finds on the ledger, can tell what governance recorded from what
// another hand appended. Signing is computation only, so it may happen in
// a write's build.
func signed[M credential.SignedPayload](p *Plane, m M) (M, error) {
	if p.signer == nil {
		return m, nil
	}
	return m, credential.SignInto(p.signer, m)
}

// requestHolds reports whether the request that opened approval ap holds:
// signed by this plane's key, or one it trusts, over the terms ap shows
// its approvers. One that does not is logged; nothing follows the
// approval. An unsigned one is taken as before (unsignedFromBefore).
func (p *Plane) requestHolds(taskID string, ap *stewardv1.Approval) bool {
	if p.signer == nil || unsignedFromBefore(ap.GetRequestSigned()) {
		return true
	}
	if err := credential.VerifyApprovalRequest(ap, p.credentials.trustedKeys()...); err != nil {
		p.logger.Error("approval request refused, nothing follows the approval: "+err.Error(), "task", taskID, "action", ap.GetActionId(), "plan_hash", ap.GetPlanHash(), "approval", ap.GetApprovalId())
		return false
	}
	return true
}

// snapshotFault says why a's snapshot, found on the ledger, is not the one
// governance signed, or "" if it is (or is unsigned: unsignedFromBefore).
func (p *Plane) snapshotFault(a *stewardv1.Action) string {
	if p.signer == nil || unsignedFromBefore(a.GetSnapshotSigned()) {
		return ""
	}
	if err := credential.VerifySnapshot(a, p.credentials.trustedKeys()...); err != nil {
		return err.Error()
	}
	return ""
}
