package e2e_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/proto"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/gen/steward/v1/stewardv1connect"
)

// TestRequestIDs runs issue 10's request id findings against the binary:
// request ids are each caller's own, a request id names one command, and
// RenewCredential takes one.
func TestRequestIDs(t *testing.T) {
	p := startBinary(t, t.TempDir())
	ctx := context.Background()
	ana, bo := actingAs(p.url, "user:ana"), actingAs(p.url, "user:bo")

	t.Run("two callers with one request id make two tasks", func(t *testing.T) {
		a, err := ana.tasks.CreateTask(ctx, connect.NewRequest(&stewardv1.CreateTaskRequest{RequestId: "demo-1", Contract: contract()}))
		if err != nil {
			t.Fatal(err)
		}
		other := contract()
		other.Intent = "Something else entirely"
		b, err := bo.tasks.CreateTask(ctx, connect.NewRequest(&stewardv1.CreateTaskRequest{RequestId: "demo-1", Contract: other}))
		if err != nil {
			t.Fatalf("bo's demo-1 after ana's: %v", err)
		}
		aID, bID := a.Msg.Task.Contract.TaskId, b.Msg.Task.Contract.TaskId
		if !a.Msg.Created || !b.Msg.Created || aID == bID || b.Msg.Task.Contract.Intent != other.Intent {
			t.Fatalf("ana's task %s (created %v), bo's %s (created %v, intent %q); want two new tasks", aID, a.Msg.Created, bID, b.Msg.Created, b.Msg.Task.Contract.Intent)
		}
		// Each caller's retry finds its own task, and nothing of the other's.
		again, err := bo.tasks.CreateTask(ctx, connect.NewRequest(&stewardv1.CreateTaskRequest{RequestId: "demo-1", Contract: other}))
		if err != nil || again.Msg.Created || again.Msg.Task.Contract.TaskId != bID {
			t.Fatalf("bo's retry: %v, %v; want bo's task %s", err, again, bID)
		}
		if _, err := bo.tasks.CreateTask(ctx, connect.NewRequest(&stewardv1.CreateTaskRequest{RequestId: "demo-1", Contract: contract()})); connect.CodeOf(err) != connect.CodeAlreadyExists || strings.Contains(err.Error(), aID) {
			t.Fatalf("bo's demo-1 with ana's contract: %v; want already_exists naming bo's own task, not ana's %s", err, aID)
		}
	})

	t.Run("a pause's request id does not cancel", func(t *testing.T) {
		taskID := createTask(t, ana, "to-pause").Contract.TaskId
		waitStarted(t, ana, taskID)
		if _, err := ana.tasks.PauseTask(ctx, connect.NewRequest(&stewardv1.PauseTaskRequest{TaskId: taskID, RequestId: "r1", Reason: "hold on"})); err != nil {
			t.Fatal(err)
		}
		_, err := ana.tasks.CancelTask(ctx, connect.NewRequest(&stewardv1.CancelTaskRequest{TaskId: taskID, RequestId: "r1", Reason: "stop"}))
		if connect.CodeOf(err) != connect.CodeAlreadyExists || !strings.Contains(err.Error(), `request id "r1" was first used for PauseTask on task `+taskID) {
			t.Fatalf("cancel with the pause's request id: %v; want already_exists naming the pause", err)
		}
		waitStatus(t, ana, taskID, stewardv1.TaskStatus_TASK_STATUS_PAUSED)
		if _, err := ana.tasks.CancelTask(ctx, connect.NewRequest(&stewardv1.CancelTaskRequest{TaskId: taskID, RequestId: "r2", Reason: "stop"})); err != nil {
			t.Fatalf("cancel with its own request id: %v", err)
		}
		waitStatus(t, ana, taskID, stewardv1.TaskStatus_TASK_STATUS_CANCELLED)
	})

	t.Run("renewals with one request id renew once", func(t *testing.T) {
		gov := stewardv1connect.NewGovernanceServiceClient(&http.Client{Timeout: 30 * time.Second}, p.url, connect.WithInterceptors(principalHeader("user:ops")))
		taskID := createTask(t, ana, "to-renew").Contract.TaskId
		waitStarted(t, ana, taskID)
		var first *stewardv1.CredentialState
		for i := range 10 {
			resp, err := gov.RenewCredential(ctx, connect.NewRequest(&stewardv1.RenewCredentialRequest{TaskId: taskID, Reason: "long job", RequestId: "renew-1"}))
			if err != nil {
				t.Fatalf("renewal %d: %v", i, err)
			}
			if first == nil {
				first = resp.Msg.Credential
			}
			if !proto.Equal(resp.Msg.Credential, first) || first.Renewals != 1 {
				t.Fatalf("renewal %d answered %d renewals, the same as the first %v", i, resp.Msg.Credential.Renewals, proto.Equal(resp.Msg.Credential, first))
			}
		}
		_, err := gov.RenewCredential(ctx, connect.NewRequest(&stewardv1.RenewCredentialRequest{TaskId: taskID, Reason: "another reason", RequestId: "renew-1"}))
		if connect.CodeOf(err) != connect.CodeAlreadyExists || !strings.Contains(err.Error(), "RenewCredential on task "+taskID) {
			t.Fatalf("the renewal's id with another reason: %v; want already_exists naming the renewal", err)
		}
		if cs := waitCredential(t, ana, taskID); cs.Renewals != 1 {
			t.Fatalf("the credential was renewed %d times, want 1", cs.Renewals)
		}
	})
}
