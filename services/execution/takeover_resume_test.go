package execution_test

import (
	"context"
	"testing"
	"time"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/stewardtest"
	"github.com/steward-run/steward/pkg/task"
	"github.com/steward-run/steward/services/execution/breaker"
)

// TestResumeIsNotBlockedByAnotherWorkersLiveCall: action A's call is
// in flight at another, live worker (it heartbeats). The task is paused;
// action B is permitted meanwhile; the task resumes. The resume is the only
// event that brings B's permit back, so it must claim B now, not when A's
// call ends. carryOn returns at the first error, and hold answers a live
// lease with errs.Later, so B waits for as long as A's call lasts.
func TestResumeIsNotBlockedByAnotherWorkersLiveCall(t *testing.T) {
	b := newHarness(t, breaker.Config{})
	ts := startTool(t)
	b.register(ts, "charge", false, nil)
	b.plane.Stop()
	taskID, actionA := b.permit("t-hol", "charge", "card-a")
	b.Append(taskID, &stewardv1.ActionClaimed{ActionId: actionA, PermitId: "pm-" + actionA, Worker: "other"},
		&stewardv1.ActionDispatched{ActionId: actionA, Attempt: 1, Worker: "other"})
	b.Append(taskID, &stewardv1.ActionHeartbeat{ActionId: actionA, Attempt: 1, Beat: 1})
	// "other" is alive: the plane's clock stands still at A's last
	// heartbeat, so its lease never runs out, as if it went on beating.
	alive := time.Now()
	b.cfg.Now = func() time.Time { return alive }
	actionB, permitB := b.allow(taskID, "p2", "charge", "card-b")
	b.Append(taskID, &stewardv1.TaskPaused{Reason: "hold on"})
	b.Append(taskID, permitB) // a paused task may hold a permit; it is claimed on resume

	b.start()
	b.Append(taskID, &stewardv1.TaskResumed{Reason: "go on"})

	stewardtest.Eventually(t, 10*time.Second, func() (bool, string) {
		tk, _, err := b.Tasks.Load(context.Background(), taskID)
		if err != nil {
			t.Fatal(err)
		}
		return task.FindAction(tk, actionB.ActionId).Status != stewardv1.ActionStatus_ACTION_STATUS_PERMITTED,
			"B's permit unclaimed after the resume while A's worker is alive: the resume is stuck behind another worker's live call"
	})
	if a := b.WaitAction(taskID, actionA, func(*stewardv1.Action) bool { return true }); a.Status != stewardv1.ActionStatus_ACTION_STATUS_DISPATCHED {
		t.Errorf("A is %v, want still dispatched at its live worker", a.Status)
	}
}
