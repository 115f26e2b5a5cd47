package control_test

import (
	"context"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/steward-run/steward/pkg/event"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/stewardtest"
)

// TestAHeartbeatClearsAStallMark: a stall mark that stands is
// a suspension (governance/stall.go, timers.stallSuspendAfter), and issue
// 32 says a stalled task is one with "no heartbeat or progress past its
// mark". A task whose contract does not watch its agent (the default: no
// agent_ask_after) records no heartbeat, so an agent that is alive and
// heartbeating, but idle, keeps its mark and is suspended. A heartbeat on
// a marked task is news: it should be recorded, which clears the mark.
func TestAHeartbeatClearsAStallMark(t *testing.T) {
	r := newHarness(t)
	ctx := context.Background()
	p, _, err := r.ctl.CreateTask(ctx, "agent", validRequest("beats-marked"))
	if err != nil {
		t.Fatal(err)
	}
	id := p.Contract.TaskId
	tk := r.running(id)
	r.AppendEvents(id, stewardtest.Event(t, id, &stewardv1.TaskStalled{Reason: "no progress for 15m0s; no action is in flight", QuietSince: tk.UpdatedAt}))
	r.WaitTask(id, func(tk *stewardv1.Task) bool { return tk.StalledSince != nil })
	if _, err := r.ctl.Heartbeat(ctx, "agent", &stewardv1.HeartbeatRequest{TaskId: id, Note: "thinking"}); err != nil {
		t.Fatal(err)
	}
	if n := r.counts(t, id)[event.TypeAgentHeartbeat]; n != 1 {
		t.Fatalf("a heartbeat on a task marked stalled recorded %d events; want 1, which clears the mark before governance suspends the task", n)
	}
}

// TestAHeartbeatKeepsAnIdleTaskFromStalling: on a contract that does not
// watch its agent, a heartbeat is no news while the task is fresh, and is
// recorded once the task has been quiet for half its stall threshold —
// before the watchdog would mark it — so an agent alive and idle is never
// marked, at one event per half threshold.
func TestAHeartbeatKeepsAnIdleTaskFromStalling(t *testing.T) {
	r := newHarness(t)
	ctx := context.Background()
	req := validRequest("beats-idle")
	req.Contract.Timers = &stewardv1.TaskTimers{StallAfter: durationpb.New(2 * time.Minute)}
	p, _, err := r.ctl.CreateTask(ctx, "agent", req)
	if err != nil {
		t.Fatal(err)
	}
	id := p.Contract.TaskId
	r.running(id)
	beat := func() int {
		t.Helper()
		if _, err := r.ctl.Heartbeat(ctx, "agent", &stewardv1.HeartbeatRequest{TaskId: id}); err != nil {
			t.Fatal(err)
		}
		return r.counts(t, id)[event.TypeAgentHeartbeat]
	}
	if n := beat(); n != 0 {
		t.Fatalf("a heartbeat on a fresh task recorded %d events; it is no news", n)
	}
	r.clock.Advance(61 * time.Second)
	if n := beat(); n != 1 {
		t.Fatalf("a heartbeat past half the stall threshold recorded %d events, want 1", n)
	}
	if n := beat(); n != 1 {
		t.Fatalf("a heartbeat right after a recorded one recorded %d in all, want 1", n)
	}
}
