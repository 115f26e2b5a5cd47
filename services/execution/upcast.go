package execution

import stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"

// This file is the one place where the execution plane reads what earlier
// builds wrote (docs/compatibility.md): a task lives across upgrades. The
// rule here is for a shape that cannot be made today's, so it is a named
// function the plane calls; no record is rewritten on read.

// unsignedDecidedAgain reports whether a's permit, whose signature does
// not hold, goes back to governance rather than being set aside: an
// unsigned one that is stale or expired (reason, from revalidation). A
// permit issued before permits were signed (7972f44, 2026-12-01) is
// decided again that way (pause and resume the task), and all a forger
// gets by it is governance's own decision, from records it verifies
// (votesHold), signed.
func unsignedDecidedAgain(a *stewardv1.Action, reason stewardv1.RevalidationReason) bool {
	return a.SignedPermit == nil && reason != stewardv1.RevalidationReason_REVALIDATION_REASON_UNSPECIFIED
}
