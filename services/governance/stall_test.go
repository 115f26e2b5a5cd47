package governance_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/steward-run/steward/pkg/event"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/stewardtest"
)

// markedTask writes a running task, suspended two minutes after a stall
// mark stands, and its mark, made at the plane's clock; it returns the
// mark's event id.
func (e *harness) markedTask(t *testing.T, id string) string {
	t.Helper()
	c := &stewardv1.TaskContract{Intent: "sync", DesiredOutcome: "synced", RequesterRef: "user:a",
		Timers: &stewardv1.TaskTimers{StallSuspendAfter: durationpb.New(2 * time.Minute)}}
	tk := e.Append(id, &stewardv1.TaskCreated{Contract: c}, &stewardv1.TaskStarted{})
	mark := stewardtest.Event(t, id, &stewardv1.TaskStalled{Reason: "no progress for 15m0s; no action is in flight", QuietSince: tk.UpdatedAt})
	mark.Time = timestamppb.New(e.clock.Now())
	e.AppendEvents(id, mark)
	return mark.EventId
}

// TestAStallMarkThatStandsSuspendsTheTask: a mark nothing moved for
// stall_suspend_after, by the plane's clock, suspends its task once
// (SUSPEND_CAUSE_STALLED, caused by the mark, saying why and how to go
// on); a mark not yet that old, or one an event cleared before it came
// due, suspends nothing.
func TestAStallMarkThatStandsSuspendsTheTask(t *testing.T) {
	e := newHarness(t)
	stands := e.markedTask(t, "stands")
	e.markedTask(t, "moved")
	e.AppendEvents("moved", stewardtest.Event(t, "moved", &stewardv1.AgentHeartbeat{Note: "back"}))
	e.clock.Advance(3 * time.Minute)
	e.markedTask(t, "young")
	e.start(t, withoutSigner)

	tk := e.WaitTask("stands", func(tk *stewardv1.Task) bool { return tk.Status == stewardv1.TaskStatus_TASK_STATUS_SUSPENDED })
	if tk.SuspendedFor != stewardv1.SuspendCause_SUSPEND_CAUSE_STALLED || !strings.Contains(tk.StatusReason, "no action is in flight") ||
		!strings.Contains(tk.StatusReason, "2m") || !strings.Contains(tk.StatusReason, "ResumeTask") {
		t.Fatalf("suspended for %s: %q; want the stall, its reason, the wait and how to go on", tk.SuspendedFor, tk.StatusReason)
	}
	e.settleTimers(t)
	recs, err := e.Log.Read(context.Background(), "stands")
	if err != nil {
		t.Fatal(err)
	}
	var suspensions []*stewardv1.Event
	for _, r := range recs {
		if r.Event.Type == event.TypeTaskSuspended {
			suspensions = append(suspensions, r.Event)
		}
	}
	if len(suspensions) != 1 || suspensions[0].CausationId != stands || suspensions[0].Actor.GetPlane() != "governance" {
		t.Fatalf("suspensions %v; want one by governance, caused by the mark %s", suspensions, stands)
	}
	for _, id := range []string{"moved", "young"} {
		if n := e.counts(t, id)[event.TypeTaskSuspended]; n != 0 {
			t.Errorf("%s: %d suspensions, want none", id, n)
		}
	}
}
