package state_test

import (
	"context"
	"strings"
	"testing"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/proto"

	"github.com/steward-run/steward/pkg/event"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/stewardtest"
)

// TestGetActionServesOneAction reads actions one by one through
// QueryService.GetAction: each is the action GetTask shows, with the
// task's status and last sequence; bad ids are refused naming the field,
// and an unknown task or action is not found.
func TestGetActionServesOneAction(t *testing.T) {
	ctx := context.Background()
	env := stewardtest.NewEnv(t)
	h := append(running(), act("a1", "search", "web", "r1")...)
	h = append(h, succeededOutcome("a1", 1))
	h = append(h, act("a2", "search", "web", "r1")...)
	env.Append("t1", h...)
	appendUnchecked(t, env.Log, "bad", &stewardv1.TaskCreated{Contract: contract(0)}, &stewardv1.TaskCancelled{}, &stewardv1.TaskStarted{})
	client, _ := serveState(t, env)

	task, err := client.GetTask(ctx, connect.NewRequest(&stewardv1.GetTaskRequest{TaskId: "t1"}))
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []stewardv1.ActionStatus{stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED, stewardv1.ActionStatus_ACTION_STATUS_DISPATCHED} {
		id := []string{"a1", "a2"}[i]
		got, err := client.GetAction(ctx, connect.NewRequest(&stewardv1.GetActionRequest{TaskId: "t1", ActionId: id}))
		if err != nil {
			t.Fatalf("GetAction %s: %v", id, err)
		}
		if a := got.Msg.Action; a.ActionId != id || a.Status != want || !proto.Equal(a, task.Msg.Task.Actions[i]) {
			t.Errorf("GetAction %s = %v, want GetTask's %v", id, a, task.Msg.Task.Actions[i])
		}
		if got.Msg.TaskStatus != task.Msg.Task.Status || got.Msg.TaskStatusReason != task.Msg.Task.StatusReason || got.Msg.LastSequence != task.Msg.Task.LastSequence {
			t.Errorf("GetAction %s: task %v %q at %d, want %v %q at %d", id, got.Msg.TaskStatus, got.Msg.TaskStatusReason, got.Msg.LastSequence,
				task.Msg.Task.Status, task.Msg.Task.StatusReason, task.Msg.Task.LastSequence)
		}
	}

	for _, tt := range []struct {
		taskID, actionID string
		code             connect.Code
		says             string
	}{
		{"", "a1", connect.CodeInvalidArgument, "task_id: is required"},
		{"no/such", "a1", connect.CodeInvalidArgument, "task_id:"},
		{"t1", "", connect.CodeInvalidArgument, "action_id: is required"},
		{"nope", "a1", connect.CodeNotFound, "task nope not found"},
		{"t1", "a9", connect.CodeNotFound, `task t1 has no action "a9"`},
		{"bad", "a1", connect.CodeDataLoss, "run VerifyTask"},
	} {
		_, err := client.GetAction(ctx, connect.NewRequest(&stewardv1.GetActionRequest{TaskId: tt.taskID, ActionId: tt.actionID}))
		if connect.CodeOf(err) != tt.code || !strings.Contains(err.Error(), tt.says) {
			t.Errorf("GetAction(%q, %q) = %v, want %v saying %q", tt.taskID, tt.actionID, err, tt.code, tt.says)
		}
	}
}

// TestGetActionReadsItsWrites appends an action's outcome and reads it at
// once: GetAction waits for the view to catch up, as GetTask does.
func TestGetActionReadsItsWrites(t *testing.T) {
	ctx := context.Background()
	env := stewardtest.NewEnv(t)
	client, _ := serveState(t, env)
	env.Append("t1", append(running(), act("a1", "search", "web", "r1")...)...)
	for i := range 20 {
		id := "b" + string(rune('a'+i))
		env.Append("t1", append([]event.Payload(nil), act(id, "search", "web", "r1")...)...)
		env.Append("t1", succeededOutcome(id, 1))
		got, err := client.GetAction(ctx, connect.NewRequest(&stewardv1.GetActionRequest{TaskId: "t1", ActionId: id}))
		if err != nil {
			t.Fatal(err)
		}
		if got.Msg.Action.Status != stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED {
			t.Fatalf("action %s read right after its outcome is %v", id, got.Msg.Action.Status)
		}
	}
}
