package execution

import (
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
