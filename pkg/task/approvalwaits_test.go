package task_test

import (
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/task"
)

// TestTheReminderComesFirst: whatever a contract sets, an approval's
// reminder comes before its escalation and its suspension — halfway to the
// first of them when the contract does not set it — and a threshold without
// a backup escalates to nobody.
func TestTheReminderComesFirst(t *testing.T) {
	h := time.Hour
	for _, tt := range []struct {
		backup                    string
		remind, escalate, suspend time.Duration
		want                      task.ApprovalWaits
	}{
		{"", 0, 0, 0, task.ApprovalWaits{Remind: 24 * h, Suspend: 72 * h}},
		{"", 0, 2 * h, 0, task.ApprovalWaits{Remind: 24 * h, Suspend: 72 * h}},
		{"user:b", 0, 2 * h, 0, task.ApprovalWaits{Remind: h, Escalate: 2 * h, Suspend: 72 * h}},
		{"user:b", 0, 0, 10 * h, task.ApprovalWaits{Remind: 5 * h, Suspend: 10 * h}},
		{"user:b", 0, 8 * h, 6 * h, task.ApprovalWaits{Remind: 3 * h, Escalate: 8 * h, Suspend: 6 * h}},
		{"user:b", 3 * h, 2 * h, 0, task.ApprovalWaits{Remind: 3 * h, Escalate: 2 * h, Suspend: 72 * h}},
		{"", 100 * h, 0, 0, task.ApprovalWaits{Remind: 36 * h, Suspend: 72 * h}},
	} {
		c := &stewardv1.TaskContract{ApprovalBackupRef: tt.backup, Timers: &stewardv1.TaskTimers{}}
		for _, d := range []struct {
			v   time.Duration
			set **durationpb.Duration
		}{{tt.remind, &c.Timers.ApprovalRemindAfter}, {tt.escalate, &c.Timers.ApprovalEscalateAfter}, {tt.suspend, &c.Timers.ApprovalSuspendAfter}} {
			if d.v > 0 {
				*d.set = durationpb.New(d.v)
			}
		}
		if got := task.ApprovalWaitsOf(c); got != tt.want {
			t.Errorf("backup %q, remind %s, escalate %s, suspend %s: %+v, want %+v", tt.backup, tt.remind, tt.escalate, tt.suspend, got, tt.want)
		}
	}
}
