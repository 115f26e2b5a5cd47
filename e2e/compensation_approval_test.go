package e2e_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/stewardtest"
)

// TestCompensationIsNotApprovedByItsProposer runs the self-approval
// sequence against the real binary: user:bo, who holds the approver's
// role, creates a task, makes a reversible write and fails the task with
// compensate. The compensation is irreversible, so the default policy
// asks for approval; Steward proposed it, but on bo's behalf, so bo may
// not approve it (permission_denied naming the rule), and another
// approver may.
func TestCompensationIsNotApprovedByItsProposer(t *testing.T) {
	tool := stewardtest.StartTool(t)
	schema := `{"type":"object"}`
	entry := func(name, effect, extra string) string {
		return fmt.Sprintf(`{"name": %q, "version": "1.0.0", "effectClass": %q, "dataSensitivity": "DATA_SENSITIVITY_INTERNAL", %s
		  "parametersSchema": %q, "http": {"url": %q}}`, name, effect, extra, schema, tool.URL+"/"+name)
	}
	h := startSteward(t, setup{tools: []string{
		entry("book", "EFFECT_CLASS_REVERSIBLE_WRITE", `"compensatingTool": "unbook",`),
		entry("unbook", "EFFECT_CLASS_IRREVERSIBLE", ""),
	}})
	bo, di := h.approver, withToken(h.url, secondApproverToken)
	ctx := context.Background()

	k := contract()
	k.AllowedTools = []string{"book", "unbook"}
	k.RecoveryPolicy = &stewardv1.RecoveryPolicy{Mode: stewardv1.RecoveryMode_RECOVERY_MODE_COMPENSATE}
	created, err := bo.tasks.CreateTask(ctx, connect.NewRequest(&stewardv1.CreateTaskRequest{RequestId: "own-booking", Contract: k}))
	if err != nil {
		t.Fatal(err)
	}
	taskID := created.Msg.Task.Contract.TaskId
	waitStarted(t, bo.clients, taskID)
	booked := propose(t, bo, taskID, "book-1", "book", map[string]any{"room": "4b"})
	waitAction(t, bo.clients, taskID, booked.ActionId, stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED)
	if _, err := bo.tasks.FailTask(ctx, connect.NewRequest(&stewardv1.FailTaskRequest{TaskId: taskID, Reason: "undo the booking"})); err != nil {
		t.Fatal(err)
	}

	var undo *stewardv1.Action
	waitServed(t, bo.clients, taskID, 15*time.Second, func(tk *stewardv1.Task) (bool, string) {
		for _, a := range tk.Actions {
			if a.Compensates == booked.ActionId && a.Status == stewardv1.ActionStatus_ACTION_STATUS_AWAITING_APPROVAL {
				undo = a
			}
		}
		return undo != nil, "the compensation does not wait for approval:\n" + describeActions(tk)
	})
	decide := func(c authed) error {
		_, err := c.governance.DecideApproval(ctx, connect.NewRequest(&stewardv1.DecideApprovalRequest{
			ApprovalId: undo.Approval.ApprovalId, ActionHash: undo.ActionHash, Decision: stewardv1.ApprovalDecision_APPROVAL_DECISION_APPROVE,
		}))
		return err
	}
	err = decide(bo)
	if connect.CodeOf(err) != connect.CodePermissionDenied ||
		!strings.Contains(err.Error(), "user:bo proposed action "+booked.ActionId) || !strings.Contains(err.Error(), "compensation") {
		t.Fatalf("bo approving the compensation of their own write: %v; want permission_denied naming the rule", err)
	}
	if err := decide(di); err != nil {
		t.Fatalf("another approver: %v", err)
	}
	failed := waitStatus(t, bo.clients, taskID, stewardv1.TaskStatus_TASK_STATUS_FAILED)
	for _, a := range failed.Actions {
		if a.ActionId == undo.ActionId && (a.Status != stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED || a.Approval.GetDecidedBy() != "user:di") {
			t.Fatalf("the compensation after user:di's approval:\n%s", describeActions(failed))
		}
	}
}
