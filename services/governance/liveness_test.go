package governance_test

import (
	"context"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/steward-run/steward/pkg/event"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/stewardtest"
	"github.com/steward-run/steward/pkg/task"
	"github.com/steward-run/steward/services/governance"
)

// silentAgentTask writes a running task whose contract watches its
// agent: asked after a minute, escalated after two, suspended after three.
func (e *harness) silentAgentTask(t *testing.T, id string) {
	t.Helper()
	contract := &stewardv1.TaskContract{
		Intent: "sync", DesiredOutcome: "synced", RequesterRef: "user:a", AccountableOwnerRef: "user:o",
		Timers: &stewardv1.TaskTimers{AgentAskAfter: durationpb.New(time.Minute), AgentEscalateAfter: durationpb.New(2 * time.Minute),
			AgentSuspendAfter: durationpb.New(3 * time.Minute)},
	}
	e.Append(id, &stewardv1.TaskCreated{Contract: contract}, &stewardv1.TaskStarted{})
}

// TestASilentAgentIsAskedEscalatedAndSuspended: with the plane's clock
// past every rung, the ladder climbs each in turn, once, and stops at the
// suspension; the owners are named in the escalation.
func TestASilentAgentIsAskedEscalatedAndSuspended(t *testing.T) {
	e := newHarness(t)
	e.silentAgentTask(t, "quiet")
	e.clock.Advance(4 * time.Minute)
	e.start(t, withoutSigner)
	tk := e.WaitTask("quiet", func(tk *stewardv1.Task) bool { return tk.Status == stewardv1.TaskStatus_TASK_STATUS_SUSPENDED })
	if tk.SuspendedFor != stewardv1.SuspendCause_SUSPEND_CAUSE_AGENT_SILENT {
		t.Fatalf("suspended for %s, want the agent's silence", tk.SuspendedFor)
	}
	e.settleTimers(t)
	recs, err := e.Log.Read(context.Background(), "quiet")
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	for _, r := range recs {
		switch r.Event.Type {
		case event.TypeAgentAsked, event.TypeAgentEscalated, event.TypeTaskSuspended:
			order = append(order, r.Event.Type)
		}
		if esc := r.Event.GetAgentEscalated(); esc != nil && (len(esc.Owners) != 2 || esc.Owners[1] != "user:o" || esc.SilentFor.AsDuration() < 2*time.Minute) {
			t.Errorf("the escalation: %v", esc)
		}
	}
	if len(order) != 3 || order[0] != event.TypeAgentAsked || order[1] != event.TypeAgentEscalated || order[2] != event.TypeTaskSuspended {
		t.Fatalf("the ladder climbed %v; want asked, escalated, suspended, each once", order)
	}
}

// TestAnAgentThatSpeaksIsNotEscalated: asked, the agent answers (any
// word of its own); the ladder starts again from that word, and nothing
// more happens while the plane's clock has not reached its next rung.
func TestAnAgentThatSpeaksIsNotEscalated(t *testing.T) {
	e := newHarness(t)
	e.silentAgentTask(t, "answers")
	e.clock.Advance(90 * time.Second)
	e.start(t, withoutSigner)
	e.waitCounts(t, "answers", func(n map[string]int, _ *stewardv1.Task) bool { return n[event.TypeAgentAsked] == 1 })
	beat := stewardtest.Event(t, "answers", &stewardv1.AgentHeartbeat{Note: "still syncing"})
	beat.Time = timestamppb.New(e.clock.Now()) // the agent speaks by the same clock the plane asks by
	tk := e.AppendEvents("answers", beat)
	if tk.AgentSeenAt == nil || !tk.AgentSeenAt.AsTime().After(tk.AgentAskedAt.AsTime()) {
		t.Fatalf("the heartbeat did not close the ask: seen %v, asked %v", tk.AgentSeenAt, tk.AgentAskedAt)
	}
	// Past where the old ladder would escalate (two minutes from the
	// start), short of the new one's ask (a minute from the heartbeat): a
	// person's pause and resume set the ladder again, and it waits.
	e.clock.Advance(45 * time.Second)
	e.AppendEvents("answers", e.byPerson(t, "answers", &stewardv1.TaskPaused{Reason: "held"}), e.byPerson(t, "answers", &stewardv1.TaskResumed{Reason: "back"}))
	e.settleTimers(t)
	if n := e.counts(t, "answers"); n[event.TypeAgentAsked] != 1 || n[event.TypeAgentEscalated] != 0 || n[event.TypeTaskSuspended] != 0 {
		t.Fatalf("after the agent spoke: %v; want the one ask and nothing more", n)
	}
}

// byPerson is payload as an event of a person's, not the agent's, at the
// plane's clock.
func (e *harness) byPerson(t *testing.T, id string, payload event.Payload) *stewardv1.Event {
	ev := stewardtest.Event(t, id, payload)
	ev.Actor.Principal, ev.Time = "user:ops", timestamppb.New(e.clock.Now())
	return ev
}

// settleTimers waits until the plane has handled every timer that fired
// and every event: what the ladder was going to do is on the log.
func (e *harness) settleTimers(t *testing.T) {
	t.Helper()
	e.Bus.Settle(t, e.Timers.StreamOf(governance.PlaneName), governance.TimerConsumer)
	e.Settle(governance.PlaneName)
}

// TestAResumeStartsTheLadderAgain: the agent is silent past every rung
// while a person holds the task; the resume counts its silence afresh
// (and so sets its timers under new ids: one that fired while the task was
// held is not ignored as already fired), and no rung comes at once.
func TestAResumeStartsTheLadderAgain(t *testing.T) {
	e := newHarness(t)
	e.silentAgentTask(t, "held")
	e.start(t, withoutSigner)
	e.AppendEvents("held", e.byPerson(t, "held", &stewardv1.TaskPaused{Reason: "held"}))
	e.clock.Advance(4 * time.Minute) // every rung due while held
	tk := e.AppendEvents("held", e.byPerson(t, "held", &stewardv1.TaskResumed{Reason: "back"}))
	if tk.AgentSeenAt.AsTime().Before(e.clock.Now().Add(-time.Second)) || task.AgentAsked(tk) || task.AgentEscalated(tk) {
		t.Fatalf("the resume did not restart the count: seen %v at %v, asked %v", tk.AgentSeenAt.AsTime(), e.clock.Now(), task.AgentAsked(tk))
	}
	e.settleTimers(t)
	if n := e.counts(t, "held"); n[event.TypeAgentAsked]+n[event.TypeAgentEscalated]+n[event.TypeTaskSuspended] != 0 {
		t.Fatalf("right after the resume: %v; want nothing yet", n)
	}
}
