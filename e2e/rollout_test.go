package e2e_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/encoding/protojson"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/stewardtest"
)

// TestRolloutRollsBack runs the binary with search@1 and search@2
// registered, v2's server refusing every call: `steward rollouts start`
// ramps v2 at 50%; the agent fails each task whose call failed; once two
// candidate tasks failed the rollout is ROLLED_BACK in `steward rollouts
// get -o json`, naming its figures, and a later task's call goes to v1.
func TestRolloutRollsBack(t *testing.T) {
	tool := stewardtest.StartTool(t).Always("/v2", stewardtest.Answer{Code: 400})
	tools := writeFile(t, t.TempDir(), "tools.json", fmt.Sprintf(`{"tools": [
	 {"name": "search", "version": "1", "effectClass": "EFFECT_CLASS_READ", "dataSensitivity": "DATA_SENSITIVITY_INTERNAL", "http": {"url": %q}},
	 {"name": "search", "version": "2", "effectClass": "EFFECT_CLASS_READ", "dataSensitivity": "DATA_SENSITIVITY_INTERNAL", "http": {"url": %q}}]}`,
		tool.URL+"/v1", tool.URL+"/v2"))
	p := startBinary(t, t.TempDir(), "--tools", tools)
	c := newClients(p.url)
	ops := newPerson(t, p.url, "")
	out, _ := ops.run(0, "rollouts", "start", "--tool", "search", "--version", "2", "--stable", "1", "--steps", "50,100",
		"--min-tasks", "2", "--max-failure-rate", "0.5", "-o", "json")
	ro := &stewardv1.Rollout{}
	if err := protojson.Unmarshal([]byte(out), ro); err != nil || ro.State != stewardv1.RolloutState_ROLLOUT_STATE_RAMPING {
		t.Fatalf("rollouts start printed %q (%v), want a RAMPING rollout", out, err)
	}
	get := func() *stewardv1.Rollout {
		out, _ := ops.run(0, "rollouts", "get", ro.RolloutId, "-o", "json")
		got := &stewardv1.Rollout{}
		if err := protojson.Unmarshal([]byte(out), got); err != nil {
			t.Fatalf("rollouts get printed %q: %v", out, err)
		}
		return got
	}
	ctx := context.Background()
	for i := 0; get().State == stewardv1.RolloutState_ROLLOUT_STATE_RAMPING; i++ {
		if i == 40 {
			t.Fatalf("40 tasks and the rollout still ramps: %v", get())
		}
		taskID := createTask(t, c, fmt.Sprint("ramp-", i)).Contract.TaskId
		waitStarted(t, c, taskID)
		a := propose(t, authed{clients: c}, taskID, "s", "search", map[string]any{"q": "incidents"})
		if a.ToolVersion == "1" {
			waitAction(t, c, taskID, a.ActionId, stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED)
			continue
		}
		waitAction(t, c, taskID, a.ActionId, stewardv1.ActionStatus_ACTION_STATUS_FAILED)
		if _, err := c.tasks.FailTask(ctx, connect.NewRequest(&stewardv1.FailTaskRequest{TaskId: taskID, Reason: "search failed"})); err != nil {
			t.Fatal(err)
		}
		waitStatus(t, c, taskID, stewardv1.TaskStatus_TASK_STATUS_FAILED)
		stewardtest.Eventually(t, 15*time.Second, func() (bool, string) {
			r := get()
			return r.Figures.GetFailed() > 0 || r.State != stewardv1.RolloutState_ROLLOUT_STATE_RAMPING || r.Step > 0, "the failure is not counted"
		})
	}
	got := get()
	if got.State != stewardv1.RolloutState_ROLLOUT_STATE_ROLLED_BACK || got.Figures.Failed != 2 || got.Reason == "" {
		t.Fatalf("rollout reads %v, want ROLLED_BACK after 2 failed candidate tasks, with a reason", got)
	}
	v1, v2 := tool.CallsTo("/v1"), tool.CallsTo("/v2")
	taskID := createTask(t, c, "after").Contract.TaskId
	waitStarted(t, c, taskID)
	a := propose(t, authed{clients: c}, taskID, "s", "search", map[string]any{"q": "incidents"})
	waitAction(t, c, taskID, a.ActionId, stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED)
	if a.ToolVersion != "1" || tool.CallsTo("/v1") != v1+1 || tool.CallsTo("/v2") != v2 {
		t.Errorf("after the rollback a new task called search@%s (v1 %d→%d, v2 %d→%d calls), want v1", a.ToolVersion, v1, tool.CallsTo("/v1"), v2, tool.CallsTo("/v2"))
	}
}
