package state_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/steward-run/steward/pkg/event"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/rpc"
	"github.com/steward-run/steward/pkg/secret"
	"github.com/steward-run/steward/pkg/stewardtest"
	"github.com/steward-run/steward/services/state"
)

// TestContentIsNotReadThroughGetTask: a caller whom GetResult refuses
// (PermissionDenied: the task does not name them) must not read the same
// result through GetTask, GetAction or ListTasks, where a result of at
// most 1 KiB travels inline in its outcome (Outcome.result): they see that
// there is a result (a keyed digest of it, not its plain SHA-256, which
// would give a short result away to guesses), not what it is. WatchTask and ReplayTask,
// which stream the raw events that carry it, refuse them. The task's
// parties and the auditor still read it everywhere, and a stranger's
// blanked copy leaves the shared view whole.
func TestContentIsNotReadThroughGetTask(t *testing.T) {
	ctx := context.Background()
	env := stewardtest.NewEnv(t)
	tokens := rpc.Tokens{
		"token-of-user:eve-0123456789":   {Principal: "user:eve"},
		"token-of-user:a-0123456789":     {Principal: "user:a"}, // t1's requester
		"token-of-user:audit-0123456789": {Principal: "user:audit", Roles: []string{state.AuditorRole}},
	}
	secret := []byte(`{"ssn":"123-45-6789"}`)
	h := []event.Payload{&stewardv1.TaskCreated{Contract: contract(1)}, &stewardv1.TaskStarted{}}
	h = append(h, act("a1", "lookup", "crm", "r1")...)
	h = append(h, resultOutcome(t, env, "a1", secret))
	env.Append("t1", h...)
	as := serveContent(t, env, tokens)
	eve := as("token-of-user:eve-0123456789")
	if _, err := eve.GetResult(ctx, connect.NewRequest(&stewardv1.GetResultRequest{TaskId: "t1", ActionId: "a1"})); connect.CodeOf(err) != connect.CodePermissionDenied {
		t.Fatalf("GetResult by eve = %v, want PermissionDenied", err)
	}

	// views returns action a1 of t1 as GetTask, GetAction and ListTasks
	// show it to c.
	views := func(c contentClient) map[string]*stewardv1.Action {
		t.Helper()
		got, err := c.GetTask(ctx, connect.NewRequest(&stewardv1.GetTaskRequest{TaskId: "t1"}))
		if err != nil {
			t.Fatal(err)
		}
		ga, err := c.GetAction(ctx, connect.NewRequest(&stewardv1.GetActionRequest{TaskId: "t1", ActionId: "a1"}))
		if err != nil {
			t.Fatal(err)
		}
		list, err := c.ListTasks(ctx, connect.NewRequest(&stewardv1.ListTasksRequest{}))
		if err != nil {
			t.Fatal(err)
		}
		if len(got.Msg.Task.Actions) != 1 || len(list.Msg.Tasks) != 1 || len(list.Msg.Tasks[0].Actions) != 1 {
			t.Fatalf("t1 has one action: GetTask %v, ListTasks %v", got.Msg.Task.Actions, list.Msg.Tasks)
		}
		return map[string]*stewardv1.Action{"GetTask": got.Msg.Task.Actions[0], "GetAction": ga.Msg.Action, "ListTasks": list.Msg.Tasks[0].Actions[0]}
	}
	hash := ""
	// ListTasks shows summaries, with no result for anyone (the result's
	// hash stays): it is checked for eve below as the others.
	full := func(call string) []byte {
		if call == "ListTasks" {
			return nil
		}
		return secret
	}
	for call, a := range views(as("token-of-user:a-0123456789")) {
		if !bytes.Equal(a.GetOutcome().GetResult(), full(call)) {
			t.Errorf("%s gives the requester outcome.result %q, want the result", call, a.GetOutcome().GetResult())
		}
		hash = a.GetOutcome().GetResultHash()
	}
	for call, a := range views(eve) {
		if len(a.GetOutcome().GetResult()) != 0 {
			t.Errorf("%s gives eve the result GetResult refuses her: outcome.result is %s", call, a.Outcome.Result)
		}
		if o := a.GetOutcome(); o.GetResultHash() != testSealer(t).Digest("t1", hash) || o.GetStatus() != stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED {
			t.Errorf("%s shows eve the outcome %v: want its status, and the keyed digest of result_hash %s in its place", call, o, hash)
		}
	}
	// The timeline and the receipt name the result by neither its bytes
	// nor its plain hash, which would give a short result away to guesses.
	tl, err := eve.GetTimeline(ctx, connect.NewRequest(&stewardv1.GetTimelineRequest{TaskId: "t1"}))
	if err != nil {
		t.Fatal(err)
	}
	rc, err := eve.GetReceipt(ctx, connect.NewRequest(&stewardv1.GetReceiptRequest{TaskId: "t1"}))
	if err != nil {
		t.Fatal(err)
	}
	for call, m := range map[string]proto.Message{"GetTimeline": tl.Msg, "GetReceipt": rc.Msg} {
		if js := protojson.Format(m); strings.Contains(js, hash[:12]) || strings.Contains(js, "123-45-6789") {
			t.Errorf("%s shows eve the result or its plain hash %s: %s", call, hash, js)
		}
	}
	// Eve's copies were blanked, not the view the others read.
	for call, a := range views(as("token-of-user:audit-0123456789")) {
		if !bytes.Equal(a.GetOutcome().GetResult(), full(call)) {
			t.Errorf("%s gives the auditor outcome.result %q after eve's reads, want the result", call, a.GetOutcome().GetResult())
		}
	}

	// The raw events carry the result under their hash: eve gets none.
	refused := "user:eve may not read the content of task t1"
	if err := watchFirst(ctx, eve); connect.CodeOf(err) != connect.CodePermissionDenied || !strings.Contains(err.Error(), refused) {
		t.Errorf("WatchTask by eve = %v, want PermissionDenied saying %q", err, refused)
	}
	if err := replayAll(ctx, eve); connect.CodeOf(err) != connect.CodePermissionDenied || !strings.Contains(err.Error(), refused) {
		t.Errorf("ReplayTask by eve = %v, want PermissionDenied saying %q", err, refused)
	}
	for _, who := range []string{"user:a", "user:audit"} {
		c := as("token-of-" + who + "-0123456789")
		if err := watchFirst(ctx, c); err != nil {
			t.Errorf("WatchTask by %s: %v", who, err)
		}
		if err := replayAll(ctx, c); err != nil {
			t.Errorf("ReplayTask by %s: %v", who, err)
		}
	}
}

// watchFirst opens a watch of t1 and reads its first message.
func watchFirst(ctx context.Context, c contentClient) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stream, err := c.WatchTask(ctx, connect.NewRequest(&stewardv1.WatchTaskRequest{TaskId: "t1"}))
	if err != nil {
		return err
	}
	defer stream.Close()
	if !stream.Receive() {
		return stream.Err()
	}
	return nil
}

// replayAll replays t1 to its end.
func replayAll(ctx context.Context, c contentClient) error {
	stream, err := c.audit.ReplayTask(ctx, connect.NewRequest(&stewardv1.ReplayTaskRequest{TaskId: "t1"}))
	if err != nil {
		return err
	}
	defer stream.Close()
	n := 0
	for stream.Receive() {
		n++
	}
	if err := stream.Err(); err != nil {
		return err
	}
	if n == 0 {
		return errors.New("the replay sent no event")
	}
	return nil
}

// testSealer is a secret.Sealer under a fixed key: what the content tests
// key the digests shown to who may not read content with.
func testSealer(t *testing.T) *secret.Sealer {
	t.Helper()
	s, err := secret.New(bytes.Repeat([]byte{7}, secret.KeySize))
	if err != nil {
		t.Fatal(err)
	}
	return s
}
