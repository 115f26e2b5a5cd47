package governance_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/steward-run/steward/pkg/event"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/services/governance"
)

// askedTask writes a running task whose contract names an input backup
// and a ladder of the given rungs, then a question of cause asked now by
// the plane's clock; it returns the question's id.
func (e *harness) askedTask(t *testing.T, id string, cause stewardv1.NeedsInputCause, remind, escalate, suspend time.Duration) string {
	t.Helper()
	contract := &stewardv1.TaskContract{
		Intent: "sync", DesiredOutcome: "synced", RequesterRef: "user:a", AccountableOwnerRef: "user:o", InputBackupRef: "user:bo",
		Timers: &stewardv1.TaskTimers{InputRemindAfter: durationpb.New(remind), InputEscalateAfter: durationpb.New(escalate),
			InputSuspendAfter: durationpb.New(suspend)},
	}
	e.Append(id, &stewardv1.TaskCreated{Contract: contract}, &stewardv1.TaskStarted{})
	ask := e.byPerson(t, id, &stewardv1.TaskNeedsInput{Cause: cause, Question: "Which region?", Reason: "asks"})
	e.AppendEvents(id, ask)
	return ask.EventId
}

// ladderClimbed returns the rungs on the task's log, in order.
func (e *harness) ladderClimbed(t *testing.T, id string) []string {
	t.Helper()
	recs, err := e.Log.Read(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	for _, r := range recs {
		switch r.Event.Type {
		case event.TypeInputReminded, event.TypeInputEscalated, event.TypeTaskSuspended:
			order = append(order, r.Event.Type)
		}
	}
	return order
}

var fullLadder = []string{event.TypeInputReminded, event.TypeInputEscalated, event.TypeTaskSuspended}

// TestAQuestionRemindsEscalatesAndSuspends: with the plane's clock past
// every rung of an agent's question, the ladder climbs each in turn, once,
// on the log, and stops at the suspension, which keeps the question open
// and escalated to the backup.
func TestAQuestionRemindsEscalatesAndSuspends(t *testing.T) {
	e := newHarness(t)
	q := e.askedTask(t, "asked", stewardv1.NeedsInputCause_NEEDS_INPUT_CAUSE_ASKED, time.Hour, 2*time.Hour, 3*time.Hour)
	e.clock.Advance(4 * time.Hour)
	e.start(t, withoutSigner)
	tk := e.WaitTask("asked", func(tk *stewardv1.Task) bool { return tk.Status == stewardv1.TaskStatus_TASK_STATUS_SUSPENDED })
	e.settleTimers(t)
	if got := e.ladderClimbed(t, "asked"); !slices.Equal(got, fullLadder) {
		t.Fatalf("the ladder climbed %v; want %v, each once", got, fullLadder)
	}
	if o := tk.OpenInput; tk.SuspendedFor != stewardv1.SuspendCause_SUSPEND_CAUSE_INPUT_OVERDUE || o.GetQuestionId() != q || o.EscalatedTo != "user:bo" || o.RemindedAt == nil {
		t.Fatalf("suspended for %s, question %v; want the question overdue, kept open, escalated to user:bo", tk.SuspendedFor, o)
	}
}

// TestACheckpointQuestionClimbsTooAndStopsWhenAnswered: a plan
// checkpoint's question is reminded and escalated as the agent's; its
// answer stops the ladder short of the suspension. A stop Steward made on
// its own account (the same failures) climbs nothing.
func TestACheckpointQuestionClimbsTooAndStopsWhenAnswered(t *testing.T) {
	e := newHarness(t)
	// The reminder and the escalation are due at once, the suspension a
	// few seconds after, by when the question is answered.
	suspend := 2*time.Hour + 3*time.Second
	e.askedTask(t, "checkpoint", stewardv1.NeedsInputCause_NEEDS_INPUT_CAUSE_PLAN_CHECKPOINT, time.Hour, 2*time.Hour, suspend)
	e.askedTask(t, "guard", stewardv1.NeedsInputCause_NEEDS_INPUT_CAUSE_SAME_FAILURES, time.Hour, 2*time.Hour, suspend)
	e.clock.Advance(2 * time.Hour)
	e.start(t, withoutSigner)
	e.waitCounts(t, "checkpoint", func(n map[string]int, _ *stewardv1.Task) bool { return n[event.TypeInputEscalated] == 1 })
	e.AppendEvents("checkpoint", e.byPerson(t, "checkpoint", &stewardv1.InputProvided{Answer: "eu"}))
	e.waitQuestionTimersFired(t, 3) // the suspension's timer too, which finds the question closed
	e.settleTimers(t)
	if got := e.ladderClimbed(t, "checkpoint"); !slices.Equal(got, fullLadder[:2]) {
		t.Fatalf("the checkpoint's ladder climbed %v; want %v and, answered, no suspension", got, fullLadder[:2])
	}
	if got := e.ladderClimbed(t, "guard"); len(got) != 0 {
		t.Fatalf("a stop of Steward's own climbed %v; want nothing", got)
	}
}

// TestAPausedQuestionIsSuspendedOnResume: a question whose task is held
// by a person reminds and escalates, but the task is not suspended while
// held; the resume, back to waiting for the answer, brings the suspension.
func TestAPausedQuestionIsSuspendedOnResume(t *testing.T) {
	e := newHarness(t)
	e.askedTask(t, "held", stewardv1.NeedsInputCause_NEEDS_INPUT_CAUSE_ASKED, time.Hour, 2*time.Hour, 3*time.Hour)
	e.AppendEvents("held", e.byPerson(t, "held", &stewardv1.TaskPaused{Reason: "held"}))
	e.clock.Advance(4 * time.Hour)
	e.start(t, withoutSigner)
	e.waitCounts(t, "held", func(n map[string]int, _ *stewardv1.Task) bool { return n[event.TypeInputEscalated] == 1 })
	e.waitQuestionTimersFired(t, 2) // no third: a held task's suspension waits for the resume
	e.settleTimers(t)
	if got := e.ladderClimbed(t, "held"); !slices.Equal(got, fullLadder[:2]) {
		t.Fatalf("while held the ladder climbed %v; want %v and no suspension", got, fullLadder[:2])
	}
	e.AppendEvents("held", e.byPerson(t, "held", &stewardv1.TaskResumed{Reason: "back"}))
	e.WaitTask("held", func(tk *stewardv1.Task) bool {
		return tk.SuspendedFor == stewardv1.SuspendCause_SUSPEND_CAUSE_INPUT_OVERDUE && tk.OpenInput != nil
	})
}

// TestQuestionTimersSurviveRestart: the question's timer is set, the plane
// stops, the timer comes due with no plane running, and a new plane on
// the same log climbs the whole ladder, each rung once.
func TestQuestionTimersSurviveRestart(t *testing.T) {
	e := newHarness(t)
	e.askedTask(t, "restart", stewardv1.NeedsInputCause_NEEDS_INPUT_CAUSE_ASKED, time.Second, 2*time.Second, 3*time.Second)
	e.start(t, withoutSigner)
	e.waitTimers(t, "set", func(info *jetstream.StreamInfo) bool { return info.State.Msgs >= 1 })
	e.plane.Stop()
	e.waitQuestionTimersFired(t, 1)
	if got := e.ladderClimbed(t, "restart"); len(got) != 0 {
		t.Fatalf("the ladder climbed %v with no plane running", got)
	}
	e.start(t, withoutSigner)
	e.WaitTask("restart", func(tk *stewardv1.Task) bool { return tk.Status == stewardv1.TaskStatus_TASK_STATUS_SUSPENDED })
	e.settleTimers(t)
	if got := e.ladderClimbed(t, "restart"); !slices.Equal(got, fullLadder) {
		t.Fatalf("after the restart the ladder climbed %v; want %v, each once", got, fullLadder)
	}
}

// waitQuestionTimersFired waits until n question timers have fired.
func (e *harness) waitQuestionTimersFired(t *testing.T, n int) {
	t.Helper()
	fired := e.Timers.Filter("fired", governance.InputTimerKind)
	e.waitTimers(t, "fired", func(info *jetstream.StreamInfo) bool { return len(info.State.Subjects) >= n }, jetstream.WithSubjectFilter(fired))
}
