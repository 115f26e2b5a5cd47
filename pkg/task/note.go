package task

import (
	"unicode/utf8"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// MaxNoteLen bounds a tool's or approver's words quoted in a status
// reason, so that one long error does not swamp the rest.
const MaxNoteLen = 300

// Clip shortens s to at most MaxNoteLen bytes, on a rune boundary.
func Clip(s string) string {
	if len(s) <= MaxNoteLen {
		return s
	}
	cut := MaxNoteLen
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// Withdrawable reports whether a may still be withdrawn: it has not been
// permitted, denied or rejected.
func Withdrawable(a *stewardv1.Action) bool {
	switch a.GetStatus() {
	case stewardv1.ActionStatus_ACTION_STATUS_PROPOSED, stewardv1.ActionStatus_ACTION_STATUS_EVALUATED,
		stewardv1.ActionStatus_ACTION_STATUS_AWAITING_APPROVAL, stewardv1.ActionStatus_ACTION_STATUS_APPROVED:
		return true
	}
	return false
}
