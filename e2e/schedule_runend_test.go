package e2e_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/structpb"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/stewardtest"
	"github.com/steward-run/steward/pkg/task"
)

// TestScheduleRunFailureIsAnnounced runs the binary with a sink that takes
// schedule.run_failed and a schedule whose template carries a plan: a
// search, then a checkpoint. Each run starts with the plan, whose search
// runs against the real tool under real policy; the agent fails the first
// run and cancels the second while they wait at the checkpoint. Each is
// announced once, under the schedule, naming its run, and `steward
// schedules get` shows how the runs ended.
func TestScheduleRunFailureIsAnnounced(t *testing.T) {
	ops := startReceiver(t)
	sinks := writeFile(t, t.TempDir(), "sinks.json", fmt.Sprintf(`{"sinks": [
	  {"name": "ops", "url": %q, "kinds": ["schedule.run_failed"], "secrets": [%q]}]}`, ops.srv.URL, approversSecret))
	h := startSteward(t, setup{tools: governedTools(stewardtest.StartTool(t)), flags: []string{"--notify", sinks}})
	ctx := context.Background()
	params, err := structpb.NewStruct(map[string]any{"q": "competitor news"})
	if err != nil {
		t.Fatal(err)
	}
	pl := &stewardv1.Plan{Version: 1, Ending: stewardv1.PlanEnding_PLAN_ENDING_PRODUCE, Steps: []*stewardv1.Step{
		{Id: "search", Kind: &stewardv1.Step_Action{Action: &stewardv1.ActionStep{Tool: "search", Target: "news", Params: params}}},
		{Id: "review", DependsOn: []string{"search"}, Kind: &stewardv1.Step_Checkpoint{Checkpoint: &stewardv1.CheckpointStep{Question: "Publish it?"}}},
	}}
	resp, err := h.agent.schedules.CreateSchedule(ctx, connect.NewRequest(&stewardv1.CreateScheduleRequest{
		Spec:     &stewardv1.ScheduleSpec{Every: &stewardv1.ScheduleSpec_Interval{Interval: durationpb.New(2 * time.Second)}},
		Template: &stewardv1.ScheduleTemplate{Contract: contract(), Plan: pl},
	}))
	if err != nil {
		t.Fatal(err)
	}
	id := resp.Msg.Schedule.ScheduleId
	schedule := func(done func(*stewardv1.Schedule) bool) *stewardv1.Schedule {
		var s *stewardv1.Schedule
		stewardtest.Eventually(t, 30*time.Second, func() (bool, string) {
			r, err := h.agent.schedules.GetSchedule(ctx, connect.NewRequest(&stewardv1.GetScheduleRequest{ScheduleId: id}))
			if err != nil {
				return false, err.Error()
			}
			s = r.Msg.Schedule
			return done(s), fmt.Sprintf("%d runs, %d failed, %d cancelled", s.RunsStarted, s.RunsFailed, s.RunsCancelled)
		})
		return s
	}
	// atCheckpoint waits until the run's plan searched and waits for its
	// checkpoint's answer.
	atCheckpoint := func(run string) {
		stewardtest.Eventually(t, 30*time.Second, func() (bool, string) {
			got, err := h.agent.query.GetTask(ctx, connect.NewRequest(&stewardv1.GetTaskRequest{TaskId: run}))
			if err != nil {
				return false, err.Error()
			}
			search, review := task.FindStep(got.Msg.Task, "search"), task.FindStep(got.Msg.Task, "review")
			return search.GetStatus() == stewardv1.StepStatus_STEP_STATUS_SUCCEEDED && review.GetStatus() == stewardv1.StepStatus_STEP_STATUS_RUNNING,
				fmt.Sprintf("run %s: search %v, review %v", run, search.GetStatus(), review.GetStatus())
		})
	}
	first := schedule(func(s *stewardv1.Schedule) bool { return s.RunsStarted >= 1 }).LastTaskId
	atCheckpoint(first)
	if _, err := h.agent.tasks.FailTask(ctx, connect.NewRequest(&stewardv1.FailTaskRequest{TaskId: first, Reason: "the source was down"})); err != nil {
		t.Fatal(err)
	}
	second := schedule(func(s *stewardv1.Schedule) bool { return s.RunsStarted >= 2 }).LastTaskId
	atCheckpoint(second)
	if _, err := h.agent.tasks.CancelTask(ctx, connect.NewRequest(&stewardv1.CancelTaskRequest{TaskId: second, Reason: "not today"})); err != nil {
		t.Fatal(err)
	}
	if _, err := h.agent.schedules.DeleteSchedule(ctx, connect.NewRequest(&stewardv1.DeleteScheduleRequest{ScheduleId: id, Reason: "done"})); err != nil {
		t.Fatal(err)
	}
	// One sink's consumer delivers the schedule's chain in order: once the
	// second run's end is taken, a second copy of the first's would have
	// come before it.
	var runs []string
	stewardtest.Eventually(t, time.Minute, func() (bool, string) {
		runs = runs[:0]
		for _, d := range ops.taken("schedule.run_failed", id) {
			var ev struct {
				ScheduleRunEnded struct {
					End struct {
						TaskID string `json:"taskId"`
					}
				} `json:"scheduleRunEnded"`
			}
			if err := json.Unmarshal(d.note.Event, &ev); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(d.note.Act, "steward tasks get "+ev.ScheduleRunEnded.End.TaskID) {
				t.Errorf("the notification of run %s says to run %q", ev.ScheduleRunEnded.End.TaskID, d.note.Act)
			}
			runs = append(runs, ev.ScheduleRunEnded.End.TaskID)
		}
		return len(runs) >= 2, fmt.Sprintf("announced %v", runs)
	})
	if fmt.Sprint(runs) != fmt.Sprint([]string{first, second}) {
		t.Fatalf("announced runs %v, want %s then %s once each", runs, first, second)
	}
	schedule(func(s *stewardv1.Schedule) bool { return s.RunsFailed == 1 && s.RunsCancelled == 1 })
	out, _ := newPerson(t, h.url, agentToken).run(0, "schedules", "get", id)
	flat := strings.Join(strings.Fields(out), " ") // the table's columns padded
	if !strings.Contains(flat, "runs ended: 0 accepted, 1 failed, 1 cancelled") || !strings.Contains(flat, "last run end: "+second+" cancelled at") ||
		!strings.Contains(flat, first+" failed") || !strings.Contains(flat, second+" cancelled") {
		t.Errorf("schedules get printed:\n%s", out)
	}
}
