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

// TestResumeIsNotHeldUpByACallInFlight: a permit issued while its task
// was paused runs soon after the resume, even while another action's call
// is still at the tool. The resume takes up every action it finds left;
// one that is held (a call in flight, here or under another worker's
// lease) must not keep it from the others.
func TestResumeIsNotHeldUpByACallInFlight(t *testing.T) {
	// held's call stays at the tool for the whole test.
	tool := stewardtest.StartTool(t).Always("/held", stewardtest.Answer{Work: true, Hold: stewardtest.HoldUntilRelease})
	tools := fmt.Sprintf(`{"name": "held", "version": "1", "effectClass": "EFFECT_CLASS_IDEMPOTENT_WRITE", "dataSensitivity": "DATA_SENSITIVITY_INTERNAL",
	   "idempotency": {"honoursKey": true}, "statusQuery": true, "timeout": "120s", "http": {"url": %q, "statusUrl": %q}},
	  {"name": "wire", "version": "1", "effectClass": "EFFECT_CLASS_IRREVERSIBLE", "dataSensitivity": "DATA_SENSITIVITY_INTERNAL",
	   "statusQuery": true, "http": {"url": %q, "statusUrl": %q}}`, tool.URL+"/held", tool.URL+"/status", tool.URL+"/wire", tool.URL+"/status")
	h := startSteward(t, setup{tools: []string{tools}})
	agent, approver := h.agent, h.approver
	ctx := context.Background()

	k := contract()
	k.AllowedTools = []string{"held", "wire"}
	k.AuthorizerRef = "user:bo"
	taskID := h.create(t, "resume-in-flight", k)

	propose(t, agent, taskID, "held", "held", map[string]any{"item": "x"})
	stewardtest.Eventually(t, 15*time.Second, func() (bool, string) {
		return tool.CallsTo("/held") == 1, "the held call never reached the tool"
	})
	w := propose(t, agent, taskID, "wire", "wire", map[string]any{"amount": 100})
	_, a := waitAction(t, agent.clients, taskID, w.ActionId, stewardv1.ActionStatus_ACTION_STATUS_AWAITING_APPROVAL)
	if _, err := agent.tasks.PauseTask(ctx, connect.NewRequest(&stewardv1.PauseTaskRequest{TaskId: taskID, Reason: "hold on"})); err != nil {
		t.Fatal(err)
	}
	waitStatus(t, agent.clients, taskID, stewardv1.TaskStatus_TASK_STATUS_PAUSED)
	if _, err := approver.governance.DecideApproval(ctx, connect.NewRequest(&stewardv1.DecideApprovalRequest{
		ApprovalId: a.Approval.ApprovalId, ActionHash: a.ActionHash, Decision: stewardv1.ApprovalDecision_APPROVAL_DECISION_APPROVE,
	})); err != nil {
		t.Fatal(err)
	}
	waitAction(t, agent.clients, taskID, w.ActionId, stewardv1.ActionStatus_ACTION_STATUS_PERMITTED)
	resumed := time.Now()
	if _, err := agent.tasks.ResumeTask(ctx, connect.NewRequest(&stewardv1.ResumeTaskRequest{TaskId: taskID, Reason: "go on"})); err != nil {
		t.Fatal(err)
	}
	done := waitProposal(t, agent.clients, taskID, "wire", 15*time.Second, stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED)
	t.Logf("the permit issued during the pause ran %s after the resume, with the held call still in flight", time.Since(resumed).Round(time.Millisecond))
	if calls, work := tool.CallsTo("/wire"), tool.Executions(done.OpKey); calls != 1 || work != 1 {
		t.Errorf("%d calls, work done %d times; want 1 and 1", calls, work)
	}
}
