package control_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/steward-run/steward/pkg/errs"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/rpc"
)

// TestAQuestionLadderIsCheckedWhole: an escalation needs a backup; a
// role names one; the agent is no backup; the reminder, the escalation
// and the suspension come in that order, the defaults (24 h or halfway to
// a shorter suspension, halfway, 72 h) counted. Each refusal names its
// field.
func TestAQuestionLadderIsCheckedWhole(t *testing.T) {
	r := newHarness(t)
	for i, tt := range []struct {
		backup                    string
		remind, escalate, suspend time.Duration
		field                     string
	}{
		{"", 0, 2 * time.Hour, 0, "contract.timers.input_escalate_after"},
		{"role:", 0, 0, 0, "contract.input_backup_ref"},
		{"agent", 0, 0, 0, "contract.input_backup_ref"},
		{"user:bo", 3 * time.Hour, 2 * time.Hour, 0, "contract.timers.input_escalate_after"},
		{"user:bo", time.Hour, 4 * time.Hour, 3 * time.Hour, "contract.timers.input_escalate_after"},
		{"user:bo", 0, 100 * time.Hour, 0, "contract.timers.input_escalate_after"},
		{"", 2 * time.Hour, 0, time.Hour, "contract.timers.input_suspend_after"},
		{"", 80 * time.Hour, 0, 0, "contract.timers.input_remind_after"},
		{"", 0, 0, time.Hour, ""},
		{"", 0, 0, time.Second, "contract.timers.input_suspend_after"},
		{"user:bo", time.Hour, 2 * time.Hour, 3 * time.Hour, ""},
		{"role:on-call", 0, 0, 0, ""},
		{"", time.Hour, 0, 0, ""},
	} {
		req := validRequest("input-ladder-" + string(rune('a'+i)))
		req.Contract.InputBackupRef = tt.backup
		tm := &stewardv1.TaskTimers{}
		for _, d := range []struct {
			v   time.Duration
			set **durationpb.Duration
		}{{tt.remind, &tm.InputRemindAfter}, {tt.escalate, &tm.InputEscalateAfter}, {tt.suspend, &tm.InputSuspendAfter}} {
			if d.v > 0 {
				*d.set = durationpb.New(d.v)
			}
		}
		req.Contract.Timers = tm
		_, _, err := r.ctl.CreateTask(context.Background(), "agent", req)
		if got := fieldOf(err); got != tt.field {
			t.Errorf("%d: backup %q, remind %s, escalate %s, suspend %s: %v; want the field %q", i, tt.backup, tt.remind, tt.escalate, tt.suspend, err, tt.field)
		}
	}
}

// TestTheBackupAnswersOnceEscalated: the contract's input backup may not
// answer a question before governance escalates it to them, though the
// question asks the requester; after, they may, even while the task is
// suspended for it, and the task runs again; the agent may neither
// answer as the backup nor, with tokens, resume past the question. A role
// backup: any holder but the task's agent.
func TestTheBackupAnswersOnceEscalated(t *testing.T) {
	r := newHarness(t)
	ctx := context.Background()
	for _, tt := range []struct {
		backup     string
		who, agent rpc.Identity
	}{
		{"user:bo", rpc.Identity{Principal: "user:bo"}, rpc.Identity{Principal: "t"}},
		{"role:on-call", rpc.Identity{Principal: "user:oc", Roles: []string{"on-call"}}, rpc.Identity{Principal: "t", Roles: []string{"on-call"}}},
	} {
		req := validRequest("backup-" + tt.backup)
		req.Contract.InputBackupRef = tt.backup
		tk, _, err := r.ctl.CreateTask(ctx, "t", req)
		if err != nil {
			t.Fatal(err)
		}
		id := tk.Contract.TaskId
		r.running(id)
		tk, err = r.ctl.RequestInput(ctx, "t", &stewardv1.RequestInputRequest{TaskId: id, Question: "Which region?", AskRef: "user:a"})
		if err != nil {
			t.Fatal(err)
		}
		answer := func(who rpc.Identity) error {
			_, err := r.ctl.ProvideInput(ctx, who, &stewardv1.ProvideInputRequest{TaskId: id, Answer: "eu"})
			return err
		}
		if err := answer(tt.who); errs.CodeOf(err) != errs.PermissionDenied || !strings.Contains(err.Error(), "once the question is escalated to them") {
			t.Fatalf("%s before the escalation: %v; want refused, saying when they may", tt.backup, err)
		}
		q := tk.OpenInput.QuestionId
		r.Append(id, &stewardv1.InputReminded{QuestionId: q}, &stewardv1.InputEscalated{QuestionId: q, ToRef: tt.backup},
			&stewardv1.TaskSuspended{Cause: stewardv1.SuspendCause_SUSPEND_CAUSE_INPUT_OVERDUE, Reason: "overdue"})
		if err := answer(tt.agent); errs.CodeOf(err) != errs.PermissionDenied {
			t.Fatalf("%s: the task's agent answering its own question as the backup: %v; want refused", tt.backup, err)
		}
		agent := tt.agent
		agent.Verified = true
		if _, err := r.ctl.ResumeTask(ctx, agent, &stewardv1.ResumeTaskRequest{TaskId: id}); errs.CodeOf(err) != errs.PermissionDenied {
			t.Fatalf("%s: the task's agent resuming past its overdue question: %v; want refused", tt.backup, err)
		}
		tk, err = r.ctl.ProvideInput(ctx, tt.who, &stewardv1.ProvideInputRequest{TaskId: id, Answer: "eu"})
		if err != nil || tk.Status != stewardv1.TaskStatus_TASK_STATUS_RUNNING || tk.OpenInput != nil {
			t.Fatalf("%s after the escalation: %v, %v; want the suspended task running, its question answered", tt.backup, tk.GetStatus(), err)
		}
	}
}
