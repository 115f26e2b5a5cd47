package control_test

import (
	"context"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// TestAnApprovalEscalationIsCheckedWhole: a backup needs a threshold and a
// threshold a backup; the threshold comes after the reminder and before
// the suspension the contract sets; a role names one; under separation of
// duties the requester is no backup. Each refusal names its field.
func TestAnApprovalEscalationIsCheckedWhole(t *testing.T) {
	r := newHarness(t)
	h := func(d time.Duration) *durationpb.Duration { return durationpb.New(d) }
	for i, tt := range []struct {
		backup                    string
		remind, escalate, suspend time.Duration
		sod                       bool
		field                     string
	}{
		{"", 0, 2 * time.Hour, 0, false, "contract.timers.approval_escalate_after"},
		{"user:bo", 0, 0, 0, false, "contract.approval_backup_ref"},
		{"role:", 0, 2 * time.Hour, 0, false, "contract.approval_backup_ref"},
		{"user:bo", 3 * time.Hour, 2 * time.Hour, 0, false, "contract.timers.approval_escalate_after"},
		{"user:bo", time.Hour, 4 * time.Hour, 3 * time.Hour, false, "contract.timers.approval_escalate_after"},
		{"user:bo", 0, time.Second, 0, false, "contract.timers.approval_escalate_after"},
		{"user:a", 0, 2 * time.Hour, 0, true, "contract.approval_backup_ref"},
		{"agent", 0, 2 * time.Hour, 0, true, "contract.approval_backup_ref"},
		{"user:bo", time.Hour, 2 * time.Hour, 3 * time.Hour, true, ""},
		{"role:on-call", 0, 2 * time.Hour, 0, false, ""},
		// Against governance's waits, defaults included: suspended at
		// 72 hours by default, so never escalated at 73; a suspension
		// set shorter than the escalation; a reminder before either.
		{"user:bo", 0, 73 * time.Hour, 0, false, "contract.timers.approval_escalate_after"},
		{"user:bo", 0, 2 * time.Hour, 90 * time.Minute, false, "contract.timers.approval_escalate_after"},
		{"user:bo", 0, 30 * time.Hour, 0, false, ""},
	} {
		req := validRequest("escalation-" + string(rune('a'+i)))
		req.Contract.ApprovalBackupRef, req.Contract.SeparationOfDuties = tt.backup, tt.sod
		if tt.sod {
			req.Contract.AcceptanceOwnerRef, req.Contract.AuthorizerRef = "user:owner", "user:auth"
		}
		req.Contract.Timers = &stewardv1.TaskTimers{}
		for _, d := range []struct {
			v   time.Duration
			set **durationpb.Duration
		}{{tt.remind, &req.Contract.Timers.ApprovalRemindAfter}, {tt.escalate, &req.Contract.Timers.ApprovalEscalateAfter}, {tt.suspend, &req.Contract.Timers.ApprovalSuspendAfter}} {
			if d.v > 0 {
				*d.set = h(d.v)
			}
		}
		_, _, err := r.ctl.CreateTask(context.Background(), "agent", req)
		if got := fieldOf(err); got != tt.field {
			t.Errorf("%d: backup %q, remind %s, escalate %s, suspend %s: %v; want the field %q", i, tt.backup, tt.remind, tt.escalate, tt.suspend, err, tt.field)
		}
	}
}
