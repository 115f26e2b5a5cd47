package task

import (
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/steward-run/steward/pkg/errs"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// The question ladder (docs/input.md, "When nobody answers"): a question
// the agent asks (RequestInput) or a plan checkpoint asks reminds whom it
// asks after contract.timers.input_remind_after, goes to the contract's
// input_backup_ref after input_escalate_after, and suspends its task after
// input_suspend_after (SUSPEND_CAUSE_INPUT_OVERDUE), each counted from
// when it was asked. Governance's timers climb it; the fold records each
// rung on the open question, which a suspension for it leaves open: its
// answer resumes the task, as an approval decided while its task is
// suspended still counts.

// How long a question waits, when the contract does not say, before its
// reminder and its task's suspension: as long as an approval.
const (
	DefaultInputRemindAfter  = 24 * time.Hour
	DefaultInputSuspendAfter = 72 * time.Hour
)

// InputLadder is when a question of a task climbs each rung, counted from
// when it was asked.
type InputLadder struct {
	Remind, Escalate, Suspend time.Duration
	// Backup is whom it is escalated to; empty for no escalation.
	Backup string
}

// InputLadderOf is c's question ladder, its defaults filled in as an
// approval's are (ApprovalWaitsOf): a contract that does not set the
// reminder is reminded halfway to a sooner escalation or suspension it
// sets; an escalation the contract names a backup for but no time comes
// halfway between the reminder and the suspension.
func InputLadderOf(c *stewardv1.TaskContract) InputLadder {
	tm := c.GetTimers()
	l := InputLadder{Suspend: orDuration(tm.GetInputSuspendAfter(), DefaultInputSuspendAfter), Backup: c.GetInputBackupRef()}
	var escalate time.Duration
	if l.Backup != "" {
		escalate = tm.GetInputEscalateAfter().AsDuration()
	}
	l.Remind = remindBefore(tm.GetInputRemindAfter(), DefaultInputRemindAfter, escalate, l.Suspend)
	if l.Backup != "" {
		l.Escalate = orDuration(tm.GetInputEscalateAfter(), (l.Remind+l.Suspend)/2)
	}
	return l
}

func orDuration(d *durationpb.Duration, def time.Duration) time.Duration {
	if d.AsDuration() > 0 {
		return d.AsDuration()
	}
	return def
}

// Laddered reports whether question q climbs the ladder: the agent's and
// a plan checkpoint's. When Steward stopped the task itself (a loop
// guard, the action cap, a failure) the task's people steer it, as before.
func Laddered(q *stewardv1.InputRequest) bool {
	switch q.GetCause() {
	case stewardv1.NeedsInputCause_NEEDS_INPUT_CAUSE_ASKED, stewardv1.NeedsInputCause_NEEDS_INPUT_CAUSE_PLAN_CHECKPOINT:
		return true
	}
	return false
}

// SuspendedForInput reports whether t is suspended because its open
// question waited too long: the question is still open.
func SuspendedForInput(t *stewardv1.Task) bool {
	return t.Status == stewardv1.TaskStatus_TASK_STATUS_SUSPENDED && t.SuspendedFor == stewardv1.SuspendCause_SUSPEND_CAUSE_INPUT_OVERDUE
}

// inputStep checks a rung of the ladder against t's open question.
func inputStep(t *stewardv1.Task, ev *stewardv1.Event) (commit func(), ok bool, err error) {
	switch p := ev.Payload.(type) {
	case *stewardv1.Event_InputReminded:
		q, err := openQuestion(t, p.InputReminded.QuestionId)
		if err != nil {
			return nil, true, err
		}
		return func() { q.RemindedAt = ev.Time; t.OpenInput = q }, true, nil
	case *stewardv1.Event_InputEscalated:
		e := p.InputEscalated
		q, err := openQuestion(t, e.QuestionId)
		switch backup := t.Contract.GetInputBackupRef(); {
		case err != nil:
		case backup == "" || e.ToRef != backup:
			err = errs.New(errs.FailedPrecondition, "question %s escalated to %q, not the contract's input backup %q", e.QuestionId, e.ToRef, backup)
		case q.EscalatedTo != "":
			err = errs.New(errs.FailedPrecondition, "question %s was escalated already, to %s", e.QuestionId, q.EscalatedTo)
		}
		if err != nil {
			return nil, true, err
		}
		return func() { q.EscalatedTo, q.EscalatedAt = e.ToRef, ev.Time; t.OpenInput = q }, true, nil
	}
	return nil, false, nil
}

// openQuestion is a copy of t's open question if it is question id, to
// change and put in its place.
func openQuestion(t *stewardv1.Task, id string) (*stewardv1.InputRequest, error) {
	q := t.OpenInput
	if q == nil || id == "" || q.QuestionId != id {
		return nil, errs.New(errs.FailedPrecondition, "task %s: question %s is not its open question", t.Contract.GetTaskId(), errs.Quote(id))
	}
	return proto.CloneOf(q), nil
}

// checkInputSuspension refuses a suspension for an overdue question of a
// task that is not waiting for an answer to one.
func checkInputSuspension(t *stewardv1.Task, s *stewardv1.TaskSuspended) error {
	if s.Cause == stewardv1.SuspendCause_SUSPEND_CAUSE_INPUT_OVERDUE && (t.Status != stewardv1.TaskStatus_TASK_STATUS_WAITING_FOR_INPUT || t.OpenInput == nil) {
		return illegal(t, "suspend for an overdue question")
	}
	return nil
}
