package governance_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/steward-run/steward/pkg/event"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/stewardtest"
	"github.com/steward-run/steward/services/governance"
)

// dueIn returns a deadline d from now by the wall clock: timers fire by
// the server's clock, which no test clock reaches, in whole seconds.
func dueIn(d time.Duration) *timestamppb.Timestamp { return timestamppb.New(time.Now().Add(d)) }

// deadlined creates a running task whose accountable owner is the
// principal a test's events name (so that it may extend the deadline),
// due at deadline.
func (e *harness) deadlined(t *testing.T, taskID string, deadline *timestamppb.Timestamp) {
	t.Helper()
	k := credContract([]string{"search"}, nil)
	k.AccountableOwnerRef, k.Deadline = stewardtest.Principal, deadline
	e.create(t, taskID, "agent:a", k)
}

// deadlineSuspensions returns the task's suspensions at a deadline.
func (e *harness) deadlineSuspensions(t *testing.T, taskID string) []*stewardv1.Event {
	t.Helper()
	recs, err := e.Log.Read(context.Background(), taskID)
	if err != nil {
		t.Fatal(err)
	}
	var out []*stewardv1.Event
	for _, r := range recs {
		if r.Event.GetTaskSuspended().GetCause() == stewardv1.SuspendCause_SUSPEND_CAUSE_DEADLINE {
			out = append(out, r.Event)
		}
	}
	return out
}

// waitDeadlineSuspended waits until the task is suspended at its
// deadline, then until every timer has fired and been handled, and checks
// that it was suspended once, for its deadline now.
func (e *harness) waitDeadlineSuspended(t *testing.T, taskID string, timers int) *stewardv1.Event {
	t.Helper()
	tk := e.WaitTask(taskID, func(tk *stewardv1.Task) bool {
		return tk.Status == stewardv1.TaskStatus_TASK_STATUS_SUSPENDED && tk.SuspendedFor == stewardv1.SuspendCause_SUSPEND_CAUSE_DEADLINE
	})
	e.waitFired(t, timers)
	got := e.deadlineSuspensions(t, taskID)
	if len(got) != 1 {
		t.Fatalf("suspended at a deadline %d times, want once", len(got))
	}
	ev := got[0]
	want := tk.Contract.Deadline.AsTime().UTC().Format(time.RFC3339)
	if r := ev.GetTaskSuspended().Reason; !strings.Contains(r, "deadline "+want+" has passed") || !strings.Contains(r, "ExtendDeadline") {
		t.Errorf("reason %q: want it to name the deadline %s and ExtendDeadline", r, want)
	}
	if ev.Actor.GetPlane() != governance.PlaneName {
		t.Errorf("recorded by %v", ev.Actor)
	}
	return ev
}

// waitFired waits until n timers have fired and the plane's consumers
// have handled them and what they led to.
func (e *harness) waitFired(t *testing.T, n int) {
	t.Helper()
	fired := e.Timers.Filter("fired", governance.DeadlineTimerKind)
	ctx := context.Background()
	stewardtest.Eventually(t, 15*time.Second, func() (bool, string) {
		s, err := e.JS.Stream(ctx, e.Timers.StreamOf(governance.PlaneName))
		if err != nil {
			t.Fatal(err)
		}
		info, err := s.Info(ctx, jetstream.WithSubjectFilter(fired))
		if err != nil {
			t.Fatal(err)
		}
		return len(info.State.Subjects) >= n, fmt.Sprintf("%d of %d deadline timers fired", len(info.State.Subjects), n)
	})
	e.Bus.Settle(t, e.Timers.StreamOf(governance.PlaneName), governance.TimerConsumer)
	e.Settle(governance.PlaneName)
}

// TestDeadlineSuspendsTheTask: the timer at a task's deadline suspends
// it once, naming the deadline; a second delivery of the timer, or the
// creation's reaction again, records nothing more.
func TestDeadlineSuspendsTheTask(t *testing.T) {
	e := newHarness(t)
	e.start(t, withoutSigner)
	e.deadlined(t, "due", dueIn(time.Second))
	e.waitDeadlineSuspended(t, "due", 1)

	// Everything again: a new plane whose consumers start from the
	// beginning gets the creation and the fired timer once more.
	e.plane.Stop()
	ctx := context.Background()
	if err := e.JS.DeleteConsumer(ctx, e.Timers.StreamOf(governance.PlaneName), governance.TimerConsumer); err != nil {
		t.Fatal(err)
	}
	if err := e.JS.DeleteConsumer(ctx, e.Log.Config().Stream, governance.PlaneName); err != nil {
		t.Fatal(err)
	}
	e.start(t, withoutSigner)
	e.waitDeadlineSuspended(t, "due", 1)
}

// TestExtendedDeadlineFiresAtTheNewOne: the timer of a deadline that was
// extended before it came finds the deadline moved and does nothing; the
// new deadline's timer suspends the task.
func TestExtendedDeadlineFiresAtTheNewOne(t *testing.T) {
	e := newHarness(t)
	e.start(t, withoutSigner)
	first := dueIn(time.Second)
	e.deadlined(t, "moved", first)
	second := timestamppb.New(first.AsTime().Add(2 * time.Second))
	e.Append("moved", &stewardv1.DeadlineExtended{Previous: first, Deadline: second, Reason: "more time"})
	// The first timer fires and is handled before the second is due.
	e.waitFired(t, 1)
	if got := e.deadlineSuspensions(t, "moved"); len(got) != 0 {
		t.Fatalf("the timer of an extended deadline suspended the task: %v", got[0].GetTaskSuspended().Reason)
	}
	ev := e.waitDeadlineSuspended(t, "moved", 2)
	if !strings.Contains(ev.GetTaskSuspended().Reason, second.AsTime().UTC().Format(time.RFC3339)) {
		t.Errorf("suspended for %q, want the extended deadline", ev.GetTaskSuspended().Reason)
	}
}

// TestDeadlineTimerSurvivesRestart sets the timer, stops the plane before
// it fires, lets it come due with no plane running, and starts a new
// plane on the same log: the task is suspended once.
func TestDeadlineTimerSurvivesRestart(t *testing.T) {
	e := newHarness(t)
	e.start(t, withoutSigner)
	deadline := dueIn(time.Second)
	e.deadlined(t, "restart", deadline)
	e.Settle(governance.PlaneName) // the timer is set
	e.plane.Stop()
	waitWall(t, deadline.AsTime())
	if got := e.deadlineSuspensions(t, "restart"); len(got) != 0 {
		t.Fatal("suspended with no plane running")
	}
	e.start(t, withoutSigner)
	e.waitDeadlineSuspended(t, "restart", 1)
}

// TestDeadlineLeavesHeldAndEndedTasks: a paused task, and one waiting for
// input (whose question would be lost), are left alone at their deadline
// and suspended when they run again; an ended task is left alone.
func TestDeadlineLeavesHeldAndEndedTasks(t *testing.T) {
	e := newHarness(t)
	e.start(t, withoutSigner)
	deadline := dueIn(time.Second)
	e.deadlined(t, "held", deadline)
	e.deadlined(t, "asking", deadline)
	e.deadlined(t, "ended", deadline)
	e.Append("held", &stewardv1.TaskPaused{Reason: "a look"})
	e.Append("asking", &stewardv1.TaskNeedsInput{Reason: "asked", Cause: stewardv1.NeedsInputCause_NEEDS_INPUT_CAUSE_ASKED, Question: "Which region?"})
	e.Append("ended", &stewardv1.TaskCancelled{Reason: "not needed"})
	e.waitFired(t, 3)
	for _, id := range []string{"held", "asking", "ended"} {
		if got := e.deadlineSuspensions(t, id); len(got) != 0 {
			t.Fatalf("task %s was suspended at its deadline: %v", id, got[0].GetTaskSuspended().Reason)
		}
	}
	if tk := e.WaitTask("asking", func(*stewardv1.Task) bool { return true }); tk.GetOpenInput().GetQuestion() != "Which region?" {
		t.Fatalf("the question was lost at the deadline: %v", tk.GetOpenInput())
	}
	e.Append("asking", &stewardv1.InputProvided{Answer: "eu"})
	e.waitDeadlineSuspended(t, "asking", 3)
	e.Append("held", &stewardv1.TaskResumed{Reason: "back"})
	ev := e.waitDeadlineSuspended(t, "held", 2)
	n := e.counts(t, "held")
	if n[event.TypeTaskSuspended] != 1 {
		t.Errorf("suspended %d times", n[event.TypeTaskSuspended])
	}
	if ev.CausationId == "" {
		t.Error("the suspension names no cause")
	}
}

// waitWall waits until the wall clock, by which the server fires timers,
// is past at.
func waitWall(t *testing.T, at time.Time) {
	t.Helper()
	due := at.Truncate(time.Second).Add(time.Second)
	stewardtest.Eventually(t, time.Until(due)+5*time.Second, func() (bool, string) {
		return time.Now().After(due), "the clock is not past " + due.String()
	})
}

func jetstreamSubjects(filter string) jetstream.StreamInfoOpt {
	return jetstream.WithSubjectFilter(filter)
}
