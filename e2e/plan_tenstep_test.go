package e2e_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"connectrpc.com/connect"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/stewardtest"
	"github.com/steward-run/steward/pkg/task"
)

// tenStepJSON is a plan of ten steps. a starts a diamond, a → (b, c) → d,
// whose branches call lookup; beside it a foreach over the three items of
// a's result, a step whose `when` is false, a fetch from a flaky feed and
// a one-second pause. verify reads d's join back and checks it with
// `expect` (the %s); record, an irreversible wire that policy asks a
// person to approve, ends it.
const tenStepJSON = `{"taskId": %q, "requestId": "ten-%d", "plan": {
  "version": %[2]d, "ending": "PLAN_ENDING_PRODUCE",
  "steps": [
    {"id": "a", "action": {"tool": "search", "target": "index:a", "params": {"q": "incidents", "more": ["x", "y", "z"]}},
     "expect": "result.ok == true"},
    {"id": "b", "dependsOn": ["a"], "action": {"tool": "lookup", "target": "index:b", "paramExprs": {"q": "steps.a.result.echo.q + '-left'"}}},
    {"id": "c", "dependsOn": ["a"], "action": {"tool": "lookup", "target": "index:c", "paramExprs": {"q": "steps.a.result.echo.q + '-right'"}}},
    {"id": "d", "dependsOn": ["b", "c"], "action": {"tool": "search", "target": "index:d",
     "paramExprs": {"q": "steps.b.result.echo.q + '+' + steps.c.result.echo.q"}}},
    {"id": "each", "dependsOn": ["a"], "foreach": {"over": "steps.a.result.echo.more", "maxItems": 3,
     "body": {"action": {"tool": "search", "targetExpr": "'index:' + item", "paramExprs": {"q": "item"}}}}, "expect": "result.echo.q == item"},
    {"id": "older", "dependsOn": ["a"], "when": "size(steps.a.result.echo.more) > 3",
     "action": {"tool": "search", "target": "index:older", "params": {"q": "older"}}},
    {"id": "feed", "dependsOn": ["a"], "action": {"tool": "fetch", "target": "feed:incidents", "params": {"q": "incidents"}}},
    {"id": "pause", "dependsOn": ["a"], "wait": {"duration": "1s"}},
    {"id": "verify", "dependsOn": ["d"], "action": {"tool": "search", "target": "index:d", "paramExprs": {"q": "steps.d.result.echo.q"}},
     "expect": %q},
    {"id": "record", "dependsOn": ["verify", "each", "older", "feed", "pause"], "action": {"tool": "wire", "target": "acct:42",
     "paramExprs": {"amount": "size(steps.each.result)"},
     "rationale": {"expectedImpact": "pays 3 for the incidents found", "rollbackPlan": "none: a wire is final; the approver checks the amount"}}}
  ]}}`

// TestTenStepPlan runs a ten-step plan end to end on the real binary, as
// an agent with an HTTP client would, through everything a plan does:
//
//   - the diamond's branches are in flight at the tool together: the
//     tool holds each lookup until both are there (Gather);
//   - the foreach calls the tool once per item;
//   - older's `when` is false: it is skipped and never called;
//   - the feed answers 503 to its first call, and the tool's retry policy
//     calls again with the same key;
//   - verify's `expect` fails once: version 1 expects a branch the plan
//     does not have, so the step fails and, as on_failure is unset
//     (escalate), the task stops for a person. An operator resumes it and
//     the agent submits version 2, whose verify expects the right join:
//     a changed failed step starts afresh (attempt 2, a new action), and
//     every step that succeeded stays done;
//   - record is an irreversible wire, which the default bundle lets run
//     only once the task's authorizer approves it, and only with the
//     step's rationale (its expected impact and rollback plan), which the
//     bundle asks of a high-risk change.
//
// At the end the task is produced, each step has the status it should,
// and the tool did each key's work exactly once.
func TestTenStepPlan(t *testing.T) {
	tool := stewardtest.StartTool(t).
		Gather("/lookup", 2).
		ScriptPerKey("/feed", stewardtest.Fail(http.StatusServiceUnavailable))
	tools := append(governedTools(tool),
		fmt.Sprintf(`{"name": "lookup", "version": "1.0.0", "effectClass": "EFFECT_CLASS_READ", "dataSensitivity": "DATA_SENSITIVITY_INTERNAL", "http": {"url": %q}}`, tool.URL+"/lookup"),
		fmt.Sprintf(`{"name": "fetch", "version": "1.0.0", "effectClass": "EFFECT_CLASS_READ", "dataSensitivity": "DATA_SENSITIVITY_INTERNAL", "http": {"url": %q},
		 "retryPolicy": {"maxAttempts": 3, "initialBackoff": "0.05s", "maxBackoff": "0.2s"}}`, tool.URL+"/feed"))
	h := startSteward(t, setup{tools: tools})
	ctx := context.Background()
	k := contract()
	k.AllowedTools = []string{"search", "lookup", "fetch", "wire"}
	k.AuthorizerRef = "user:bo"
	taskID := h.create(t, "ten-steps", k)
	submit := func(version int, expect string) {
		t.Helper()
		if code, resp := postAs(t, agentToken, h.url+"/steward.v1.TaskService/SubmitPlan", fmt.Sprintf(tenStepJSON, taskID, version, expect)); code != http.StatusOK {
			t.Fatalf("SubmitPlan version %d: HTTP %d %v", version, code, resp)
		}
	}
	step := func(tk *stewardv1.Task, id string) *stewardv1.PlanStepState { return task.FindStep(tk, id) }

	submit(1, "result.echo.q == 'incidents-left+incidents-middle'")
	failed := waitServed(t, h.agent.clients, taskID, 30*time.Second, func(tk *stewardv1.Task) (bool, string) {
		return tk.Status == stewardv1.TaskStatus_TASK_STATUS_WAITING_FOR_INPUT &&
			step(tk, "verify").GetStatus() == stewardv1.StepStatus_STEP_STATUS_FAILED, fmt.Sprintf("%s, plan %v", tk.Status, tk.Plan.GetSteps())
	})
	first := step(failed, "verify").ActionIds
	if _, err := h.operator.tasks.ResumeTask(ctx, connect.NewRequest(&stewardv1.ResumeTaskRequest{TaskId: taskID})); err != nil {
		t.Fatalf("ResumeTask: %v", err)
	}
	waitStatus(t, h.agent.clients, taskID, stewardv1.TaskStatus_TASK_STATUS_RUNNING)
	submit(2, "result.echo.q == 'incidents-left+incidents-right'")

	// record waits for its authorizer.
	var ap *stewardv1.Approval
	stewardtest.Eventually(t, 30*time.Second, func() (bool, string) {
		list, err := h.approver.governance.ListApprovals(ctx, connect.NewRequest(&stewardv1.ListApprovalsRequest{TaskId: taskID, PendingOnly: true}))
		if err != nil {
			return false, err.Error()
		}
		if len(list.Msg.Approvals) != 1 {
			return false, fmt.Sprintf("pending approvals %v", list.Msg.Approvals)
		}
		ap = list.Msg.Approvals[0]
		return true, ""
	})
	if ap.Tool != "wire" || ap.Rationale.GetRollbackPlan() == "" || tool.CallsTo("/wire") != 0 {
		t.Fatalf("approval %v, wire called %d times: want record's wire, with its rationale, held for its approval", ap, tool.CallsTo("/wire"))
	}
	if _, err := h.approver.governance.DecideApproval(ctx, connect.NewRequest(&stewardv1.DecideApprovalRequest{
		ApprovalId: ap.ApprovalId, ActionHash: ap.ActionHash, Decision: stewardv1.ApprovalDecision_APPROVAL_DECISION_APPROVE})); err != nil {
		t.Fatal(err)
	}
	done := waitServed(t, h.agent.clients, taskID, 30*time.Second, func(tk *stewardv1.Task) (bool, string) {
		return len(tk.Acceptance) == 1, fmt.Sprintf("%s, plan %v", tk.Status, tk.Plan.GetSteps())
	})

	// Each step ended as it should, with as many actions as it asked for.
	actions := map[string]int{"a": 1, "b": 1, "c": 1, "d": 1, "each": 3, "older": 0, "feed": 1, "pause": 0, "verify": 2, "record": 1}
	for id, n := range actions {
		s := step(done, id)
		want := stewardv1.StepStatus_STEP_STATUS_SUCCEEDED
		if id == "older" {
			want = stewardv1.StepStatus_STEP_STATUS_SKIPPED
		}
		if s.GetStatus() != want || len(s.GetActionIds()) != n {
			t.Errorf("step %s = %v, want %s with %d actions", id, s, want, n)
		}
	}
	if v := step(done, "verify"); v.Attempts != 2 || v.ActionIds[0] != first[0] {
		t.Errorf("verify = %v, want its failed first action %s then a second attempt", v, first)
	}

	// The tool's own records: the branches overlapped, the feed was called
	// twice for one piece of work, older never, and every key once.
	if n := tool.Together("/lookup"); n != 2 {
		t.Errorf("at most %d lookups were in flight together, want both branches", n)
	}
	if n := tool.CallsTo("/feed"); n != 2 {
		t.Errorf("the feed was called %d times, want 2 (a 503, then the retry)", n)
	}
	worked := tool.Worked()
	if len(worked) != 11 {
		t.Errorf("the tool worked %d times, want 11 (one per action): %+v", len(worked), worked)
	}
	for _, w := range worked {
		if n := tool.Executions(w.Key); n != 1 {
			t.Errorf("key %s (%s) executed %d times", w.Key, w.Target, n)
		}
		if w.Target == "index:older" {
			t.Errorf("the skipped step was called: %+v", w)
		}
	}
}
