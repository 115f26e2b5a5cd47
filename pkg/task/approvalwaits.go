package task

import (
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// How long an approval may wait when the task's contract does not say
// (contract.timers): first its approvers are reminded, then the task is
// suspended until someone resumes it.
const (
	DefaultApprovalRemindAfter  = 24 * time.Hour
	DefaultApprovalSuspendAfter = 72 * time.Hour
)

// ApprovalWaits are how long an approval of a task waits before each rung
// of its ladder (docs/approvals.md). Governance arms its timers with them
// and control checks a contract's escalation against the same ones, so a
// contract is refused for what governance would do, not for what it says.
type ApprovalWaits struct {
	Remind, Suspend time.Duration
	// Escalate is zero when the contract names no backup or no threshold.
	Escalate time.Duration
}

// ApprovalWaitsOf are c's waits: a missing or non-positive threshold means
// the default, and the reminder always comes first — a contract that sets
// only a short suspension or escalation is reminded halfway to the first
// of them, so that approvers hear before the task stops or the backup does.
// An escalation at or past the suspension never comes; control refuses
// such a contract (CreateTask).
func ApprovalWaitsOf(c *stewardv1.TaskContract) ApprovalWaits {
	tm := c.GetTimers()
	w := ApprovalWaits{Suspend: orDuration(tm.GetApprovalSuspendAfter(), DefaultApprovalSuspendAfter)}
	if d := tm.GetApprovalEscalateAfter().AsDuration(); d > 0 && c.GetApprovalBackupRef() != "" {
		w.Escalate = d
	}
	w.Remind = remindBefore(tm.GetApprovalRemindAfter(), DefaultApprovalRemindAfter, w.Escalate, w.Suspend)
	if w.Remind >= w.Suspend {
		w.Remind = w.Suspend / 2
	}
	return w
}

// EscalationStands reports whether ap, an approval of a task under c, is
// escalated at now: recorded so (ApprovalEscalated), and waited the
// contract's threshold by now. Now is the deciding plane's clock, never the
// event's time, which whoever appended the event chose: an escalation on the
// log early, or dated late by another hand, gives its backup nothing before
// its time.
func EscalationStands(c *stewardv1.TaskContract, ap *stewardv1.Approval, now time.Time) bool {
	after, requested := ApprovalWaitsOf(c).Escalate, ap.GetRequestedAt()
	return after > 0 && ap.GetEscalatedTo() != "" && requested != nil && now.Sub(requested.AsTime()) >= after
}

// remindBefore is a ladder's reminder: set, else def — or, when def would
// not come before the first of escalate (zero for none) and suspend,
// halfway to it. Approvals and questions share it (InputLadderOf).
func remindBefore(set *durationpb.Duration, def, escalate, suspend time.Duration) time.Duration {
	if d := set.AsDuration(); d > 0 {
		return d
	}
	first := suspend
	if escalate > 0 {
		first = min(first, escalate)
	}
	if def >= first {
		return first / 2
	}
	return def
}
