package state_test

import (
	"bytes"
	"context"
	"testing"

	"connectrpc.com/connect"

	"github.com/steward-run/steward/pkg/event"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/rpc"
	"github.com/steward-run/steward/pkg/stewardtest"
)

// TestContentIsNotReadThroughGetTask: a caller whom GetResult refuses
// (PermissionDenied: the task does not name them) must not read the same
// result through GetTask or GetAction, where a result of at most 1 KiB
// travels inline in its outcome (Outcome.result).
func TestContentIsNotReadThroughGetTask(t *testing.T) {
	ctx := context.Background()
	env := stewardtest.NewEnv(t)
	tokens := rpc.Tokens{"token-of-user:eve-0123456789": {Principal: "user:eve"}}
	secret := []byte(`{"ssn":"123-45-6789"}`)
	h := []event.Payload{&stewardv1.TaskCreated{Contract: contract(1)}, &stewardv1.TaskStarted{}}
	h = append(h, act("a1", "lookup", "crm", "r1")...)
	h = append(h, resultOutcome(t, env, "a1", secret))
	env.Append("t1", h...)
	eve := serveContent(t, env, tokens)("token-of-user:eve-0123456789")
	if _, err := eve.GetResult(ctx, connect.NewRequest(&stewardv1.GetResultRequest{TaskId: "t1", ActionId: "a1"})); connect.CodeOf(err) != connect.CodePermissionDenied {
		t.Fatalf("GetResult by eve = %v, want PermissionDenied", err)
	}
	got, err := eve.GetTask(ctx, connect.NewRequest(&stewardv1.GetTaskRequest{TaskId: "t1"}))
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range got.Msg.Task.Actions {
		if bytes.Equal(a.GetOutcome().GetResult(), secret) {
			t.Errorf("GetTask gives eve the result GetResult refuses her: action %s's outcome.result is %s", a.ActionId, a.Outcome.Result)
		}
	}
	ga, err := eve.GetAction(ctx, connect.NewRequest(&stewardv1.GetActionRequest{TaskId: "t1", ActionId: "a1"}))
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(ga.Msg.Action.GetOutcome().GetResult(), secret) {
		t.Errorf("GetAction gives eve the result GetResult refuses her")
	}
}
