package e2e_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/structpb"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/stewardtest"
)

// TestRecovery runs the recovery modes and the action cap against the
// binary and a real HTTP tool (docs/recovery.md):
//   - RETRY: a transient failure is proposed again, unchanged, up to
//     maxAttempts proposals, each governed with its own snapshot; the last
//     identical failure then stops the task for help;
//   - ESCALATE: a failure puts the task in waiting for input, and
//     ResumeTask lets it go on;
//   - the action cap: the proposal past maxActions is refused and puts the
//     task in waiting for input; ResumeTask grants maxActions more.
func TestRecovery(t *testing.T) {
	tool := stewardtest.StartTool(t).
		Always("/busy", stewardtest.Fail(http.StatusServiceUnavailable)).
		Always("/gone", stewardtest.Fail(http.StatusNotFound))
	entry := func(name, path string) string {
		return fmt.Sprintf(`{"name": %q, "version": "1", "effectClass": "EFFECT_CLASS_READ", "dataSensitivity": "DATA_SENSITIVITY_PUBLIC",
		  "http": {"url": %q}, "retryPolicy": {"maxAttempts": 1}}`, name, tool.URL+path)
	}
	h := startSteward(t, setup{tools: []string{entry("busy", "/busy"), entry("gone", "/gone"), entry("fine", "/fine")}})
	ctx := context.Background()
	propose := func(taskID, proposalID, tool string) (*stewardv1.Action, error) {
		params, _ := structpb.NewStruct(map[string]any{"q": "incidents"})
		resp, err := h.agent.tasks.ProposeAction(ctx, connect.NewRequest(&stewardv1.ProposeActionRequest{
			TaskId: taskID, ProposalId: proposalID, Tool: tool, Target: "db:1", Params: params}))
		if err != nil {
			return nil, err
		}
		return resp.Msg.Action, nil
	}
	mustPropose := func(taskID, proposalID, tool string) *stewardv1.Action {
		t.Helper()
		a, err := propose(taskID, proposalID, tool)
		if err != nil {
			t.Fatalf("propose %s: %v", proposalID, err)
		}
		return a
	}
	resume := func(taskID string) {
		t.Helper()
		if _, err := h.operator.tasks.ResumeTask(ctx, connect.NewRequest(&stewardv1.ResumeTaskRequest{TaskId: taskID, Reason: "looked at it; go on"})); err != nil {
			t.Fatal(err)
		}
		waitStatus(t, h.agent.clients, taskID, stewardv1.TaskStatus_TASK_STATUS_RUNNING)
	}
	waitingFor := func(taskID, reason string) *stewardv1.Task {
		t.Helper()
		return waitServed(t, h.agent.clients, taskID, 20*time.Second, func(tk *stewardv1.Task) (bool, string) {
			return tk.Status == stewardv1.TaskStatus_TASK_STATUS_WAITING_FOR_INPUT && strings.Contains(tk.StatusReason, reason),
				fmt.Sprintf("%v (%s), want waiting for input (%s):\n%s", tk.Status, tk.StatusReason, reason, describeActions(tk))
		})
	}

	t.Run("retry", func(t *testing.T) {
		k := contract()
		k.AllowedTools = []string{"busy"}
		k.RecoveryPolicy = &stewardv1.RecoveryPolicy{Mode: stewardv1.RecoveryMode_RECOVERY_MODE_RETRY, MaxAttempts: 3}
		taskID := h.create(t, "recovery-retry", k)
		first := mustPropose(taskID, "p", "busy")
		// Three attempts fail alike; with the default maxSameFailures of
		// 3 the loop guard stops the task once the retries are spent —
		// and only then: the stop says the reaction to the third failure
		// ran and proposed nothing more.
		tk := waitingFor(taskID, "the same failure 3 times")
		if len(tk.Actions) != 3 {
			t.Fatalf("%d actions; want 3 (maxAttempts):\n%s", len(tk.Actions), describeActions(tk))
		}
		snapshots := map[string]bool{}
		prev := first
		for i, a := range tk.Actions {
			switch {
			case a.Status != stewardv1.ActionStatus_ACTION_STATUS_FAILED || a.Outcome.GetFailureClass() != stewardv1.FailureClass_FAILURE_CLASS_TRANSIENT:
				t.Errorf("attempt %d: %v %v", i+1, a.Status, a.Outcome)
			case a.Snapshot.GetSnapshotId() == "" || snapshots[a.Snapshot.SnapshotId]:
				t.Errorf("attempt %d was not governed on its own: snapshot %q", i+1, a.Snapshot.GetSnapshotId())
			case a.RequestHash != first.RequestHash:
				t.Errorf("attempt %d is another request", i+1)
			case i > 0 && (a.RetryOf != prev.ActionId || a.RecoveryAttempt != uint32(i+1)):
				t.Errorf("attempt %d retries %q as attempt %d; want %s, %d", i+1, a.RetryOf, a.RecoveryAttempt, prev.ActionId, i+1)
			}
			snapshots[a.Snapshot.GetSnapshotId()] = true
			prev = a
		}
		if calls := tool.CallsTo("/busy"); calls != 3 {
			t.Fatalf("the tool was called %d times; want 3", calls)
		}
	})

	t.Run("escalate", func(t *testing.T) {
		k := contract()
		k.AllowedTools = []string{"gone", "fine"}
		k.RecoveryPolicy = &stewardv1.RecoveryPolicy{Mode: stewardv1.RecoveryMode_RECOVERY_MODE_ESCALATE}
		taskID := h.create(t, "recovery-escalate", k)
		a := mustPropose(taskID, "p", "gone")
		tk := waitingFor(taskID, "escalated")
		if !strings.Contains(tk.StatusReason, a.ActionId) || !strings.Contains(tk.StatusReason, "404") {
			t.Fatalf("stopped because %q; want the action and its failure named", tk.StatusReason)
		}
		if _, err := propose(taskID, "q", "fine"); connect.CodeOf(err) != connect.CodeFailedPrecondition {
			t.Fatalf("a proposal while escalated: %v; want failed_precondition", err)
		}
		resume(taskID)
		b := mustPropose(taskID, "q", "fine")
		waitAction(t, h.agent.clients, taskID, b.ActionId, stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED)
	})

	t.Run("action cap", func(t *testing.T) {
		k := contract()
		k.AllowedTools = []string{"fine"}
		k.Limits = &stewardv1.TaskLimits{MaxActions: 2}
		taskID := h.create(t, "recovery-cap", k)
		mustPropose(taskID, "a", "fine")
		mustPropose(taskID, "b", "fine")
		if _, err := propose(taskID, "c", "fine"); connect.CodeOf(err) != connect.CodeFailedPrecondition || !strings.Contains(err.Error(), "max_actions") {
			t.Fatalf("past the cap: %v; want failed_precondition naming max_actions", err)
		}
		waitingFor(taskID, "cap of 2 actions")
		resume(taskID)
		c := mustPropose(taskID, "c", "fine")
		waitAction(t, h.agent.clients, taskID, c.ActionId, stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED)
		if tk := waitStatus(t, h.agent.clients, taskID, stewardv1.TaskStatus_TASK_STATUS_RUNNING); tk.ActionsGranted != 2 {
			t.Fatalf("%d actions granted; want 2", tk.ActionsGranted)
		}
	})
}
