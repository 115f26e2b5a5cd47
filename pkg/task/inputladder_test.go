package task_test

import (
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/steward-run/steward/pkg/errs"
	"github.com/steward-run/steward/pkg/event"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/stewardtest"
	"github.com/steward-run/steward/pkg/task"
)

// ladderTask folds a task, with contract backup, that asked a question;
// it returns the task and the question's id.
func ladderTask(t *testing.T, backup string) (*stewardv1.Task, string) {
	t.Helper()
	tk := &stewardv1.Task{}
	c := &stewardv1.TaskContract{Intent: "i", InputBackupRef: backup}
	ask := stewardtest.Event(t, "t1", asked("Which region?"))
	for i, ev := range []*stewardv1.Event{stewardtest.Event(t, "t1", &stewardv1.TaskCreated{Contract: c}), stewardtest.Event(t, "t1", started()), ask} {
		if err := task.Apply(tk, ev, uint64(i+1)); err != nil {
			t.Fatal(err)
		}
	}
	if tk.OpenInput.GetQuestionId() != ask.EventId {
		t.Fatalf("the open question's id %q, want the asking event's %q", tk.OpenInput.GetQuestionId(), ask.EventId)
	}
	return tk, ask.EventId
}

// apply folds payloads into tk, failing the test unless the last is
// refused with code (0: none is).
func apply(t *testing.T, tk *stewardv1.Task, code errs.Code, payloads ...event.Payload) {
	t.Helper()
	for i, p := range payloads {
		err := task.Apply(tk, stewardtest.Event(t, "t1", p), tk.LastSequence+1)
		if i == len(payloads)-1 && code != 0 {
			if !errs.Is(err, code) {
				t.Fatalf("%T: %v, want %v", p, err, code)
			}
			return
		}
		if err != nil {
			t.Fatalf("%T: %v", p, err)
		}
	}
}

// TestFoldRecordsTheQuestionLadder: each rung lands on the open question
// it names, the escalation only to the contract's backup and once; the
// suspension for it keeps the question open, an answer resumes the task
// and a resume closes the question unanswered.
func TestFoldRecordsTheQuestionLadder(t *testing.T) {
	overdue := &stewardv1.TaskSuspended{Reason: "overdue", Cause: stewardv1.SuspendCause_SUSPEND_CAUSE_INPUT_OVERDUE}
	tk, q := ladderTask(t, "role:on-call")
	apply(t, tk, errs.FailedPrecondition, &stewardv1.InputReminded{QuestionId: "another"})
	apply(t, tk, 0, &stewardv1.InputReminded{QuestionId: q, Waited: durationpb.New(time.Hour)})
	apply(t, tk, errs.FailedPrecondition, &stewardv1.InputEscalated{QuestionId: q, ToRef: "user:eve"})
	apply(t, tk, 0, &stewardv1.InputEscalated{QuestionId: q, ToRef: "role:on-call"})
	apply(t, tk, errs.FailedPrecondition, &stewardv1.InputEscalated{QuestionId: q, ToRef: "role:on-call"})
	if o := tk.OpenInput; o.RemindedAt == nil || o.EscalatedTo != "role:on-call" || o.EscalatedAt == nil {
		t.Fatalf("the open question after its rungs: %v", o)
	}
	apply(t, tk, 0, overdue)
	if !task.SuspendedForInput(tk) || tk.OpenInput.GetEscalatedTo() != "role:on-call" {
		t.Fatalf("suspended for its question: %v, %v; want the question kept", tk.Status, tk.OpenInput)
	}
	answeredTask := proto.CloneOf(tk)
	apply(t, answeredTask, 0, answered("eu"))
	if answeredTask.Status != stewardv1.TaskStatus_TASK_STATUS_RUNNING || answeredTask.OpenInput != nil {
		t.Fatalf("answered while suspended: %v, %v; want running, the question closed", answeredTask.Status, answeredTask.OpenInput)
	}
	apply(t, tk, 0, resumed())
	if tk.Status != stewardv1.TaskStatus_TASK_STATUS_RUNNING || tk.OpenInput != nil {
		t.Fatalf("resumed while suspended: %v, %v; want running, the question closed", tk.Status, tk.OpenInput)
	}

	// Without a backup nothing escalates; nor is a running task
	// suspended for a question.
	bare, q := ladderTask(t, "")
	apply(t, bare, errs.FailedPrecondition, &stewardv1.InputEscalated{QuestionId: q})
	apply(t, bare, errs.FailedPrecondition, answered("eu"), overdue)
	// Any other suspension still closes the question.
	other, _ := ladderTask(t, "")
	apply(t, other, 0, &stewardv1.TaskSuspended{Cause: stewardv1.SuspendCause_SUSPEND_CAUSE_DEADLINE})
	if other.OpenInput != nil {
		t.Fatalf("a deadline's suspension kept the question: %v", other.OpenInput)
	}
}

// TestInputLadderDefaults: unset, a question reminds at a day (or halfway
// to a sooner suspension) and suspends at three, as an approval does, and
// escalates — only with a backup — halfway between.
func TestInputLadderDefaults(t *testing.T) {
	if l := task.InputLadderOf(&stewardv1.TaskContract{}); l.Remind != 24*time.Hour || l.Escalate != 0 || l.Suspend != 72*time.Hour {
		t.Fatalf("no backup: %+v", l)
	}
	c := &stewardv1.TaskContract{InputBackupRef: "user:bo", Timers: &stewardv1.TaskTimers{InputRemindAfter: durationpb.New(time.Hour), InputSuspendAfter: durationpb.New(3 * time.Hour)}}
	if l := task.InputLadderOf(c); l.Escalate != 2*time.Hour || l.Backup != "user:bo" {
		t.Fatalf("a backup without a time: %+v", l)
	}
	short := &stewardv1.TaskContract{Timers: &stewardv1.TaskTimers{InputSuspendAfter: durationpb.New(time.Hour)}}
	if l := task.InputLadderOf(short); l.Remind != 30*time.Minute {
		t.Fatalf("only a short suspension: %+v, want a reminder halfway", l)
	}
	soon := &stewardv1.TaskContract{InputBackupRef: "user:bo", Timers: &stewardv1.TaskTimers{InputEscalateAfter: durationpb.New(time.Hour)}}
	if l := task.InputLadderOf(soon); l.Remind != 30*time.Minute || l.Escalate != time.Hour {
		t.Fatalf("only a short escalation: %+v, want a reminder halfway to it, as an approval's", l)
	}
}
