package state_test

import (
	"context"
	"encoding/hex"
	"strings"
	"testing"

	"connectrpc.com/connect"

	"github.com/steward-run/steward/pkg/event"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/rpc"
	"github.com/steward-run/steward/pkg/stewardtest"
	"github.com/steward-run/steward/services/state"
)

// TestAStrangerGetsNoChainHead: the last event's hash covers a small
// result inline, and every other field of that event can be told, so it
// would let one who may not read the result test guesses at it. Eve gets
// no last_hash from GetTask or ListTasks, a keyed last_event_hash in the
// receipt and VerifyTask's verdict without its head hash; the auditor
// gets the head plain, the same in all three.
func TestAStrangerGetsNoChainHead(t *testing.T) {
	ctx := context.Background()
	env := stewardtest.NewEnv(t)
	tokens := rpc.Tokens{
		"token-of-user:eve-0123456789":   {Principal: "user:eve"},
		"token-of-user:audit-0123456789": {Principal: "user:audit", Roles: []string{state.AuditorRole}},
	}
	h := []event.Payload{&stewardv1.TaskCreated{Contract: contract(1)}, &stewardv1.TaskStarted{}}
	h = append(h, act("a1", "lookup", "crm", "r1")...)
	h = append(h, resultOutcome(t, env, "a1", []byte(`{"approved":true}`)))
	env.Append("t1", h...)
	as := serveContent(t, env, tokens)
	heads := func(c contentClient) (task, listed, receipt string, verified []byte, ok bool) {
		t.Helper()
		got, err := c.GetTask(ctx, connect.NewRequest(&stewardv1.GetTaskRequest{TaskId: "t1"}))
		if err != nil {
			t.Fatal(err)
		}
		list, err := c.ListTasks(ctx, connect.NewRequest(&stewardv1.ListTasksRequest{}))
		if err != nil || len(list.Msg.Tasks) != 1 {
			t.Fatalf("ListTasks: %v, %v", list, err)
		}
		rc, err := c.GetReceipt(ctx, connect.NewRequest(&stewardv1.GetReceiptRequest{TaskId: "t1"}))
		if err != nil {
			t.Fatal(err)
		}
		v, err := c.audit.VerifyTask(ctx, connect.NewRequest(&stewardv1.VerifyTaskRequest{TaskId: "t1"}))
		if err != nil {
			t.Fatal(err)
		}
		return hex.EncodeToString(got.Msg.Task.LastHash), hex.EncodeToString(list.Msg.Tasks[0].LastHash), rc.Msg.Receipt.LastEventHash, v.Msg.HeadHash, v.Msg.Ok
	}
	task, listed, receipt, verified, ok := heads(as("token-of-user:audit-0123456789"))
	if head := hex.EncodeToString(verified); !ok || len(verified) == 0 || task != head || listed != head || receipt != head {
		t.Fatalf("the auditor: GetTask %s, ListTasks %s, receipt %s, VerifyTask %s (ok %v): want one head, plain", task, listed, receipt, head, ok)
	}
	plain := task
	task, listed, receipt, verified, ok = heads(as("token-of-user:eve-0123456789"))
	if !ok || task != "" || listed != "" || len(verified) != 0 || !strings.HasPrefix(receipt, "hmac-sha256:") || strings.Contains(receipt, plain[:12]) {
		t.Errorf("eve: GetTask %q, ListTasks %q, receipt %q, VerifyTask %x (ok %v): want no head but a keyed one in the receipt, and the verdict", task, listed, receipt, verified, ok)
	}
}
