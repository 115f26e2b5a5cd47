package state_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/proto"

	"github.com/steward-run/steward/pkg/errs"
	"github.com/steward-run/steward/pkg/event"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/gen/steward/v1/stewardv1connect"
	"github.com/steward-run/steward/pkg/rpc"
	"github.com/steward-run/steward/pkg/stewardtest"
	"github.com/steward-run/steward/services/state"
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

// TestGetActionWaitsForTheOutcome holds a GetAction call with wait while
// the action is dispatched, across an unrelated event of its task, and
// answers with the outcome once it is on the log; it holds too while
// another action of the task waits for approval. An action that waits for
// a person, or is held by a paused task, is answered at once; a call is
// held no longer than the plane's MaxActionWait.
func TestGetActionWaitsForTheOutcome(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	env := stewardtest.NewEnv(t)
	p, client := serveQuery(t, env, state.Config{})
	wait := func(client stewardv1connect.QueryServiceClient, taskID, actionID string) <-chan *stewardv1.GetActionResponse {
		got := make(chan *stewardv1.GetActionResponse, 1)
		go func() {
			resp, err := client.GetAction(ctx, connect.NewRequest(&stewardv1.GetActionRequest{TaskId: taskID, ActionId: actionID, Wait: true}))
			if err != nil {
				t.Errorf("GetAction %s with wait: %v", actionID, err)
				close(got)
				return
			}
			got <- resp.Msg
		}()
		return got
	}
	// outcomeEnds holds a call on a1 of taskID until a1's outcome.
	outcomeEnds := func(taskID string, meanwhile ...event.Payload) {
		t.Helper()
		got := wait(client, taskID, "a1")
		stewardtest.Eventually(t, 10*time.Second, func() (bool, string) {
			return p.Waiting(taskID) == 1, fmt.Sprintf("%d calls wait on %s", p.Waiting(taskID), taskID)
		})
		// What changes the task, not a1, lets the call hold on.
		env.Append(taskID, meanwhile...)
		env.Append(taskID, succeededOutcome("a1", 1))
		select {
		case resp := <-got:
			if resp.GetAction().GetStatus() != stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED || resp.GetLastSequence() == 0 {
				t.Fatalf("GetAction with wait answered %v at %d, want the outcome", resp.GetAction().GetStatus(), resp.GetLastSequence())
			}
		case <-ctx.Done():
			t.Fatal("GetAction with wait did not answer after the outcome")
		}
		if n := p.Waiting(taskID); n != 0 {
			t.Errorf("%d calls still wait on %s after answering", n, taskID)
		}
	}

	env.Append("t1", append(running(), act("a1", "search", "web", "r1")...)...)
	outcomeEnds("t1", &stewardv1.ActionProposed{Action: &stewardv1.Action{ActionId: "a2", ProposalId: "p-a2", Tool: "search", ToolVersion: "1.0.0", ActionHash: "h-a2", RequestHash: "r-a2", OpKey: "op-a2"}})
	// The task waits for approval of another action: a1's call goes on.
	env.Append("t4", append(running(), act("a1", "search", "web", "r1")...)...)
	env.Append("t4", act("b1", "search", "web", "r1")[:2]...)
	outcomeEnds("t4", &stewardv1.ApprovalRequested{Approval: &stewardv1.Approval{ApprovalId: "ap4", TaskId: "t4", ActionId: "b1", ActionHash: "h-b1"}})

	// Awaiting a person: answered at once (the test's deadline would end
	// a call that held).
	env.Append("t2", append(running(), act("b1", "search", "web", "r1")[:2]...)...)
	env.Append("t2", &stewardv1.ApprovalRequested{Approval: &stewardv1.Approval{ApprovalId: "ap1", TaskId: "t2", ActionId: "b1", ActionHash: "h-b1"}})
	if resp := <-wait(client, "t2", "b1"); resp.GetAction().GetStatus() != stewardv1.ActionStatus_ACTION_STATUS_AWAITING_APPROVAL {
		t.Errorf("an action awaiting approval answered %v", resp.GetAction().GetStatus())
	}
	// Permitted in a paused task: nothing moves it until a person resumes.
	env.Append("t3", append(running(), act("c1", "search", "web", "r1")[:3]...)...)
	env.Append("t3", &stewardv1.TaskPaused{Reason: "hold"})
	if resp := <-wait(client, "t3", "c1"); resp.GetAction().GetStatus() != stewardv1.ActionStatus_ACTION_STATUS_PERMITTED || resp.GetTaskStatus() != stewardv1.TaskStatus_TASK_STATUS_PAUSED {
		t.Errorf("a permitted action of a paused task answered %v, task %v", resp.GetAction().GetStatus(), resp.GetTaskStatus())
	}

	// A call out with no outcome yet, past the plane's bound: answered
	// with the action as it stands.
	_, short := serveQuery(t, env, state.Config{MaxActionWait: 200 * time.Millisecond})
	env.Append("t5", append(running(), act("a1", "search", "web", "r1")...)...)
	if resp := <-wait(short, "t5", "a1"); resp.GetAction().GetStatus() != stewardv1.ActionStatus_ACTION_STATUS_DISPATCHED {
		t.Errorf("a call held past MaxActionWait answered %v, want the action as it stands (dispatched)", resp.GetAction().GetStatus())
	}
}

// serveQuery starts a state plane configured by cfg on env's log and
// returns it with a QueryService client over HTTP.
func serveQuery(t *testing.T, env *stewardtest.Env, cfg state.Config) (*state.Plane, stewardv1connect.QueryServiceClient) {
	t.Helper()
	p := startPlane(t, env.Log, env.Logger, cfg)
	return p, servePlane(t, env, p)
}

// servePlane serves p's queries to the client it returns.
func servePlane(t *testing.T, env *stewardtest.Env, p *state.Plane) stewardv1connect.QueryServiceClient {
	t.Helper()
	mux := http.NewServeMux()
	for _, s := range p.Services(rpc.HandlerOptions(env.Logger, nil, nil)) {
		mux.Handle(s.Path, s.Handler)
	}
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return stewardv1connect.NewQueryServiceClient(srv.Client(), srv.URL)
}

// TestWaitActionFromASeenSequence: WaitAction, the wait of a ProposeAction
// in the same process, given the sequence its proposal was written at,
// holds until the outcome and answers as GetAction with wait does; for an
// unknown task (given another task's sequence) or action it fails as
// GetAction does.
func TestWaitActionFromASeenSequence(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	env := stewardtest.NewEnv(t)
	p, client := serveQuery(t, env, state.Config{})
	seen := env.Append("t1", append(running(), act("a1", "search", "web", "r1")...)...).LastSequence
	got := make(chan *stewardv1.GetActionResponse, 1)
	go func() {
		resp, err := p.WaitAction(ctx, "t1", "a1", seen)
		if err != nil {
			t.Errorf("WaitAction from %d: %v", seen, err)
		}
		got <- resp
	}()
	stewardtest.Eventually(t, 10*time.Second, func() (bool, string) {
		return p.Waiting("t1") == 1, fmt.Sprintf("%d calls wait on t1", p.Waiting("t1"))
	})
	env.Append("t1", succeededOutcome("a1", 1))
	resp := <-got
	want, err := client.GetAction(ctx, connect.NewRequest(&stewardv1.GetActionRequest{TaskId: "t1", ActionId: "a1", Wait: true}))
	if err != nil {
		t.Fatal(err)
	}
	if resp.GetAction().GetStatus() != stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED || !proto.Equal(resp, want.Msg) {
		t.Fatalf("WaitAction answered %v, GetAction with wait %v", resp, want.Msg)
	}

	for _, tt := range []struct{ taskID, actionID, says string }{
		{"nope", "a1", "task nope not found"},
		{"t1", "a9", `task t1 has no action "a9"`},
	} {
		_, err := p.WaitAction(ctx, tt.taskID, tt.actionID, seen)
		_, rpcErr := client.GetAction(ctx, connect.NewRequest(&stewardv1.GetActionRequest{TaskId: tt.taskID, ActionId: tt.actionID, Wait: true}))
		if !errs.Is(err, errs.NotFound) || !strings.Contains(err.Error(), tt.says) || connect.CodeOf(rpcErr) != connect.CodeNotFound {
			t.Errorf("WaitAction(%q, %q) = %v, GetAction %v; want both not found saying %q", tt.taskID, tt.actionID, err, rpcErr, tt.says)
		}
	}
}
