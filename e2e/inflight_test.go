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

// TestSubTaskCancelledMidCallReleasesAfterTheCall runs the binary: a
// sub-task cancelled while its call is at the tool gives back what it did
// not spend only once the call has come back and its cost is counted. An
// independent review found the release made at the cancel, before the
// call's cost landed on the ended sub-task, where nobody charged it: a
// parent and its sub-tasks could spend without bound.
func TestSubTaskCancelledMidCallReleasesAfterTheCall(t *testing.T) {
	// The tool holds the call until the test releases it.
	tool := stewardtest.StartTool(t).Always("/search", stewardtest.Answer{Work: true, Hold: stewardtest.HoldUntilRelease})
	h := startSteward(t, setup{open: true, tools: []string{fmt.Sprintf(`{"name": "search", "version": "1", "effectClass": "EFFECT_CLASS_READ", "dataSensitivity": "DATA_SENSITIVITY_INTERNAL",
	  "costMicrosPerCall": 200, "http": {"url": %q}}`, tool.URL+"/search")}})
	c := newClients(h.url)
	ctx := context.Background()

	k := contract()
	k.Budget = &stewardv1.Budget{MaxCostMicros: 1000, Currency: "USD"}
	resp, err := c.tasks.CreateTask(ctx, connect.NewRequest(&stewardv1.CreateTaskRequest{RequestId: "mid-call-parent", Contract: k}))
	if err != nil {
		t.Fatal(err)
	}
	parentID := resp.Msg.Task.Contract.TaskId
	waitStarted(t, c, parentID)
	sub := contract()
	sub.Budget = &stewardv1.Budget{MaxCostMicros: 600, Currency: "USD"}
	d, err := c.tasks.DelegateTask(ctx, connect.NewRequest(&stewardv1.DelegateTaskRequest{
		ParentTaskId: parentID, Contract: sub, DelegateRef: "agent:sub", RequestId: "mid-call-child"}))
	if err != nil {
		t.Fatal(err)
	}
	childID := d.Msg.Task.Contract.TaskId
	waitStarted(t, c, childID)
	act := propose(t, authed{clients: c}, childID, "s", "search", map[string]any{"q": "x"})
	stewardtest.Eventually(t, 10*time.Second, func() (bool, string) {
		return tool.CallsTo("/search") == 1, "the call never reached the tool"
	})
	if _, err := c.tasks.CancelTask(ctx, connect.NewRequest(&stewardv1.CancelTaskRequest{TaskId: childID, Reason: "stop"})); err != nil {
		t.Fatal(err)
	}
	tool.Release()
	child, _ := waitAction(t, c, childID, act.ActionId, stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED)
	if child.BudgetUsed.GetCostMicros() != 200 {
		t.Fatalf("the sub-task spent %d, want the call's 200", child.BudgetUsed.GetCostMicros())
	}

	// The parent ends up charged exactly what the sub-task spent: 600
	// reserved, 400 given back after the call.
	stewardtest.Eventually(t, 10*time.Second, func() (bool, string) {
		used := getTask(t, c, parentID).BudgetUsed.GetCostMicros()
		return used == 200, fmt.Sprintf("the parent has used %d, want the 200 its sub-task spent", used)
	})
	timeline, err := c.query.GetTimeline(ctx, connect.NewRequest(&stewardv1.GetTimelineRequest{TaskId: parentID}))
	if err != nil {
		t.Fatal(err)
	}
	releases := 0
	for _, e := range timeline.Msg.Entries {
		if e.Type == "budget.released" {
			releases++
		}
	}
	if releases != 1 {
		t.Errorf("%d releases on the parent, want one", releases)
	}
}
