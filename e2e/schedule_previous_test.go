package e2e_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"connectrpc.com/connect"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/stewardtest"
)

// TestScheduleRunReadsThePreviousRun: a schedule's first run searches and
// is produced; the next firing's run names it (Task.schedule_run) and its
// agent — the schedule's creator — reads the first run's result with
// GetResult, "did yesterday's run happen, and what did it find".
func TestScheduleRunReadsThePreviousRun(t *testing.T) {
	h := startSteward(t, setup{tools: governedTools(stewardtest.StartTool(t))})
	ctx := context.Background()
	id := everyTwoSeconds(t, h, "daily-search")
	lastRun := func(n uint64) string {
		var run string
		stewardtest.Eventually(t, 20*time.Second, func() (bool, string) {
			r, err := h.agent.schedules.GetSchedule(ctx, connect.NewRequest(&stewardv1.GetScheduleRequest{ScheduleId: id}))
			if err != nil {
				return false, err.Error()
			}
			run = r.Msg.Schedule.LastTaskId
			return r.Msg.Schedule.RunsStarted >= n, fmt.Sprintf("%d runs", r.Msg.Schedule.RunsStarted)
		})
		return run
	}
	first := lastRun(1)
	waitStatus(t, h.agent.clients, first, stewardv1.TaskStatus_TASK_STATUS_RUNNING)
	a := propose(t, h.agent, first, "search-1", "search", map[string]any{"q": "competitor news"})
	waitAction(t, h.agent.clients, first, a.ActionId, stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED)
	if _, err := h.agent.tasks.MarkProduced(ctx, connect.NewRequest(&stewardv1.MarkProducedRequest{TaskId: first})); err != nil {
		t.Fatal(err)
	}
	second := lastRun(2)
	got, err := h.agent.query.GetTask(ctx, connect.NewRequest(&stewardv1.GetTaskRequest{TaskId: second}))
	if err != nil {
		t.Fatal(err)
	}
	run := got.Msg.Task.ScheduleRun
	if run.GetScheduleId() != id || run.GetPreviousTaskId() != first || run.GetFiringTime() == nil {
		t.Fatalf("the second run names %v, want schedule %s and previous run %s", run, id, first)
	}
	res, err := h.agent.query.GetResult(ctx, connect.NewRequest(&stewardv1.GetResultRequest{TaskId: run.PreviousTaskId, ActionId: a.ActionId}))
	if err != nil || res.Msg.Result == nil {
		t.Fatalf("the run's agent reads the previous run's result: %v, %v", res, err)
	}
}
