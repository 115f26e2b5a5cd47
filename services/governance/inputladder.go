package governance

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/steward-run/steward/pkg/event"
	"github.com/steward-run/steward/pkg/eventlog"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/task"
	"github.com/steward-run/steward/pkg/timer"
)

// A question the agent or a plan checkpoint asks climbs a ladder while
// nobody answers it (docs/input.md, "When nobody answers"; the thresholds
// are task.InputLadderOf's): whom it asks are reminded, then it goes to
// the contract's input_backup_ref, then its task is suspended, the
// question still open. One timer waits at its next rung, as the agent's
// liveness ladder's does (liveness.go), so that the rungs come in order
// whatever the timers' delivery; each rung's event id derives from the
// question, so a timer delivered twice climbs once. An answer, a resume
// or the task's end closes the question, and its timer then finds nothing
// to do.

// InputTimerKind is the kind of the questions' timers.
const InputTimerKind = "governance.input"

type inputTimer struct {
	TaskID     string `json:"task_id"`
	QuestionID string `json:"question_id"`
}

// nextInputRung is the rung t's open question reaches next if nobody
// answers it, and when; "" when it climbs no further, or at all.
func nextInputRung(t *stewardv1.Task) (stage string, due time.Time) {
	q := t.OpenInput
	if q == nil || !task.Laddered(q) || task.SuspendedForInput(t) {
		return "", time.Time{}
	}
	l, asked := task.InputLadderOf(t.Contract), q.AskedAt.AsTime()
	switch {
	case q.RemindedAt == nil:
		return stageRemind, asked.Add(l.Remind)
	case l.Backup != "" && q.EscalatedTo == "":
		return stageEscalate, asked.Add(l.Escalate)
	}
	return stageSuspend, asked.Add(l.Suspend)
}

// climbs reports whether t's question may take rung stage now: a
// suspension only of a task waiting for the answer; a paused one is held
// by someone, and its resume sets the timer again (armInputOnResume).
func climbs(t *stewardv1.Task, stage string) bool {
	return stage != "" && (stage != stageSuspend || t.Status == stewardv1.TaskStatus_TASK_STATUS_WAITING_FOR_INPUT)
}

// armInput sets the timer of the question a TaskNeedsInput asked.
func (ck *clock) armInput(ctx context.Context, rec *stewardv1.EventRecord) error {
	t, _, err := ck.tasks.Load(ctx, rec.Event.TaskId)
	if err != nil {
		return err
	}
	if t.OpenInput.GetQuestionId() != rec.Event.EventId {
		return nil // answered or closed already
	}
	return ck.armInputOf(ctx, t, "")
}

// armInputOnResume sets again the timer of a question whose task a
// resume returned to waiting for its answer: a suspension due while it
// was paused comes now. The timer's id names the resume, for the server
// ignores an id it fired that day.
func (ck *clock) armInputOnResume(ctx context.Context, rec *stewardv1.EventRecord) error {
	t, _, err := ck.tasks.Load(ctx, rec.Event.TaskId)
	if err != nil || t.Status != stewardv1.TaskStatus_TASK_STATUS_WAITING_FOR_INPUT {
		return err
	}
	return ck.armInputOf(ctx, t, "@"+rec.Event.EventId)
}

// armInputOf sets the timer of t's open question at its next rung. fired
// is the timer that fired, if one did, or a suffix naming what sets it.
func (ck *clock) armInputOf(ctx context.Context, t *stewardv1.Task, fired string) error {
	stage, due := nextInputRung(t)
	if !climbs(t, stage) {
		return nil
	}
	q, taskID := t.OpenInput.QuestionId, t.Contract.GetTaskId()
	payload, err := json.Marshal(inputTimer{TaskID: taskID, QuestionID: q})
	if err != nil {
		return err
	}
	id := q + "/" + stage
	switch {
	case strings.HasPrefix(fired, id): // not due yet by the plane's clock
		id = fired + "'"
	case strings.HasPrefix(fired, "@"):
		id += fired
	}
	// Timers fire by the server's clock; the plane's says how far off
	// the rung is (the same clock, but in a test that moves it on).
	if err := ck.timers.Set(ctx, InputTimerKind, id, time.Now().Add(due.Sub(ck.now())), payload); err != nil {
		return fmt.Errorf("set the %s timer of question %s: %w", stage, q, err)
	}
	return nil
}

// onInputTimer climbs the rung a question's timer waited for, if the
// question is still open and the rung due, and sets the next.
func (ck *clock) onInputTimer(ctx context.Context, f timer.Fired) error {
	var it inputTimer
	if err := json.Unmarshal(f.Payload, &it); err != nil || it.TaskID == "" || it.QuestionID == "" {
		ck.logger.Error("question timer with a bad payload; dropping it", "id", f.ID, "err", err)
		return nil
	}
	var climbed string
	err := ck.tasks.Write(ctx, it.TaskID, func(t *stewardv1.Task) (*stewardv1.Event, error) {
		climbed = ""
		stage, due := nextInputRung(t)
		if t.OpenInput.GetQuestionId() != it.QuestionID || !climbs(t, stage) || ck.now().Before(due) {
			return nil, nil
		}
		climbed = stage
		return ck.inputRung(t, stage)
	})
	if err != nil {
		if eventlog.Permanent(err) {
			ck.logger.Warn("question timer could not act", "task", it.TaskID, "question", it.QuestionID, "err", err)
			return nil
		}
		return err
	}
	if climbed != "" {
		ck.logger.Warn("a question waits for its answer", "task", it.TaskID, "question", it.QuestionID, "rung", climbed)
	}
	t, _, err := ck.tasks.Load(ctx, it.TaskID)
	if err != nil || t.OpenInput.GetQuestionId() != it.QuestionID {
		return err
	}
	return ck.armInputOf(ctx, t, f.ID)
}

// inputRung is the event of rung stage of t's open question.
func (ck *clock) inputRung(t *stewardv1.Task, stage string) (*stewardv1.Event, error) {
	q, l := t.OpenInput, task.InputLadderOf(t.Contract)
	waited := durationpb.New(ck.now().Sub(q.AskedAt.AsTime()).Round(time.Second))
	meta := event.Meta{ID: event.ID(q.QuestionId, "input-"+stage), TaskID: t.Contract.GetTaskId(),
		Actor: &stewardv1.Actor{Principal: "steward", Plane: PlaneName}, Time: ck.now(), CausationID: q.QuestionId}
	switch stage {
	case stageRemind:
		return event.New(meta, &stewardv1.InputReminded{QuestionId: q.QuestionId, Waited: waited})
	case stageEscalate:
		return event.New(meta, &stewardv1.InputEscalated{QuestionId: q.QuestionId, ToRef: l.Backup, Waited: waited})
	}
	return event.New(meta, &stewardv1.TaskSuspended{Cause: stewardv1.SuspendCause_SUSPEND_CAUSE_INPUT_OVERDUE,
		Reason: fmt.Sprintf("question %s waited longer than %s: its answer resumes the task, as a resume does without one", q.QuestionId, shortDuration(l.Suspend))})
}
