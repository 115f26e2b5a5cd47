package execution

import (
	"time"

	"github.com/steward-run/steward/pkg/errs"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// permitRefusal says why a's permit may not be claimed: its signature
// does not hold against the keys governance signs with, it names another
// action or hash, or it is not signed at all. It is nil when the permit
// holds, and always when the plane was given no keys (Config.PermitKeys).
//
// A refused permit is logged and left as it is: nothing is recorded. An
// outcome would say the action ran or failed, which it did not, and would
// let whoever forged the permit end a genuine action; the action stays
// permitted, visibly, until an operator looks (docs/permits.md).
//
// Only a permit not yet claimed is checked: one claimed or dispatched
// before an upgrade to signed permits is carried on as before.
func (p *Plane) permitRefusal(a *stewardv1.Action) error {
	if len(p.cfg.PermitKeys) == 0 {
		return nil
	}
	_, err := p.cfg.SignedHere.VerifyPermit(a.Permit, a.SignedPermit, a.ActionId, a.ActionHash, p.cfg.PermitKeys...)
	return err
}

// refusedUntil keeps a refused permit's action from stranding: a permit
// signed by a key this worker no longer trusts (one dropped after a
// rotation, docs/keys.md) is looked at again when it expires, and then,
// like any stale or expired permit that does not hold, signed or not, goes
// back to governance, which decides again from records it verifies and
// signs with the key it holds now. All a forger gets by it is that
// decision. A permit without an expiry is left as it is.
func refusedUntil(a *stewardv1.Action, now time.Time) error {
	if a.Permit.GetExpiresAt() == nil {
		return nil
	}
	// Not expired yet, or revalidation would have taken it.
	left := a.Permit.ExpiresAt.AsTime().Sub(now)
	return errs.Later(left+time.Millisecond, "permit %s refused; looked at again when it expires", a.Permit.GetPermitId())
}
