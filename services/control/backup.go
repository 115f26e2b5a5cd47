package control

import (
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/steward-run/steward/pkg/errs"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/limits"
	"github.com/steward-run/steward/pkg/task"
)

// checkBackup refuses an approval escalation that could not happen: a
// threshold without a backup, a backup without a threshold, a role with no
// name, or a threshold not between the reminder and the suspension —
// those governance would keep (task.ApprovalWaitsOf), defaults included.
func checkBackup(c *stewardv1.TaskContract) error {
	tm := c.GetTimers()
	after, backup := tm.GetApprovalEscalateAfter().AsDuration(), c.ApprovalBackupRef
	waits := task.ApprovalWaitsOf(c)
	switch {
	case backup == "" && after > 0:
		return errs.Field("contract.timers.approval_escalate_after", "needs contract.approval_backup_ref: someone to escalate to")
	case backup != "" && after <= 0:
		return errs.Field("contract.approval_backup_ref", "needs contract.timers.approval_escalate_after: when to escalate to them")
	case backup == "role:":
		return errs.Field("contract.approval_backup_ref", "names no role: \"role:<name>\", or a principal")
	case after > 0 && waits.Remind >= after:
		return errs.Field("contract.timers.approval_escalate_after", "must be longer than the reminder (%s%s): approvers are reminded before the backup hears",
			waits.Remind, orDefault(tm.GetApprovalRemindAfter()))
	case after > 0 && waits.Suspend <= after:
		return errs.Field("contract.timers.approval_escalate_after", "must be shorter than the suspension (%s%s): the backup may decide before the task stops",
			waits.Suspend, orDefault(tm.GetApprovalSuspendAfter()))
	}
	return limits.Duration("contract.timers.approval_escalate_after", tm.GetApprovalEscalateAfter(), MinApprovalTimer, MaxApprovalTimer)
}

// orDefault says, after a wait, where it came from when the contract did
// not set it.
func orDefault(set *durationpb.Duration) string {
	if set.AsDuration() > 0 {
		return ""
	}
	return ", by default"
}
