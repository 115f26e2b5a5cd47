package governance

import (
	"context"
	"fmt"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/steward-run/steward/pkg/access"
	"github.com/steward-run/steward/pkg/event"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/rpc"
	"github.com/steward-run/steward/pkg/task"
)

// An approval that waits past contract.timers.approval_escalate_after goes
// to the contract's approval_backup_ref (docs/approvals.md): its reminder
// came first, its suspension comes after, and in between the backup may
// decide it — a principal by name, or anyone holding a role — under the
// same rules of stake and separation of duties as every approver, and in
// the authorizer's stead.

// escalate records that the approval still waits and went to the backup.
// Its id derives from the approval, so a timer delivered twice escalates
// once.
func (ck *clock) escalate(ctx context.Context, at approvalTimer) error {
	var to string
	err := ck.tasks.Write(ctx, at.TaskID, func(t *stewardv1.Task) (*stewardv1.Event, error) {
		to = ""
		w, ok := openApproval(t, at.ActionID, at.ApprovalID)
		after := task.ApprovalWaitsOf(t.Contract).Escalate
		if !ok || after == 0 || w.ap.GetEscalatedTo() != "" {
			return nil, nil
		}
		if early := after - ck.now().Sub(w.requested); early > 0 {
			// The timer came by the server's clock, ahead of this
			// plane's: recorded now, the backup could not yet decide.
			return nil, fmt.Errorf("approval %s escalates in %s by this plane's clock; not yet", at.ApprovalID, early)
		}
		to = t.Contract.GetApprovalBackupRef()
		return event.New(ck.timerMeta(event.ID(at.ApprovalID, "escalated"), t, w), &stewardv1.ApprovalEscalated{
			ApprovalId: at.ApprovalID, ActionId: at.ActionID, ToRef: to, Waited: durationpb.New(ck.now().Sub(w.requested).Round(time.Second)),
		})
	})
	if err != nil || to == "" {
		return err
	}
	ck.logger.Warn("approval escalated to the contract's backup", "task", at.TaskID, "approval", at.ApprovalID, "action", at.ActionID, "to", to)
	return nil
}

// isBackup reports whether who is the backup ap, an approval of a task
// under c, stands escalated to at now (task.EscalationStands).
func isBackup(c *stewardv1.TaskContract, ap *stewardv1.Approval, who rpc.Identity, now time.Time) bool {
	if !task.EscalationStands(c, ap, now) {
		return false
	}
	return access.IsBackup(ap.GetEscalatedTo(), who.Principal, who.Roles)
}
