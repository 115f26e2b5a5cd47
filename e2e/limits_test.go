package e2e_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"connectrpc.com/connect"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/gen/steward/v1/stewardv1connect"
)

// maxAnswer is the most an error answer to an oversized request may
// take: a sentence and a field name, not the input.
const maxAnswer = 1024

// TestOversizedIDsAreRefusedSmall sends a 1 MB id to every RPC that takes
// one: each answers resource_exhausted naming the field, in a few hundred
// bytes, before it looks anything up.
func TestOversizedIDsAreRefusedSmall(t *testing.T) {
	url := startInProcess(t)
	huge := strings.Repeat("x", 1_000_000)
	tests := []struct {
		procedure, field string
		body             map[string]any
	}{
		{"/steward.v1.QueryService/GetTask", "task_id", map[string]any{"taskId": huge}},
		{"/steward.v1.QueryService/GetAction", "task_id", map[string]any{"taskId": huge, "actionId": "a"}},
		{"/steward.v1.QueryService/GetAction", "action_id", map[string]any{"taskId": "t", "actionId": huge}},
		{"/steward.v1.QueryService/GetTimeline", "task_id", map[string]any{"taskId": huge}},
		{"/steward.v1.QueryService/GetReceipt", "task_id", map[string]any{"taskId": huge}},
		{"/steward.v1.QueryService/GetResult", "task_id", map[string]any{"taskId": huge, "actionId": "a"}},
		{"/steward.v1.QueryService/GetResult", "action_id", map[string]any{"taskId": "t", "actionId": huge}},
		{"/steward.v1.QueryService/ListTasks", "page_token", map[string]any{"pageToken": huge}},
		{"/steward.v1.AuditService/VerifyTask", "task_id", map[string]any{"taskId": huge}},
		{"/steward.v1.TaskService/CreateTask", "request_id", map[string]any{"requestId": huge}},
		{"/steward.v1.TaskService/CancelTask", "task_id", map[string]any{"taskId": huge, "reason": "r"}},
		{"/steward.v1.TaskService/PauseTask", "task_id", map[string]any{"taskId": huge}},
		{"/steward.v1.TaskService/ResumeTask", "task_id", map[string]any{"taskId": huge}},
		{"/steward.v1.TaskService/FailTask", "task_id", map[string]any{"taskId": huge, "reason": "r"}},
		{"/steward.v1.TaskService/ReportUsage", "task_id", map[string]any{"taskId": huge, "tokens": "1"}},
		{"/steward.v1.TaskService/RaiseBudget", "task_id", map[string]any{"taskId": huge, "maxTokens": "1", "reason": "r"}},
		{"/steward.v1.TaskService/ProposeAction", "task_id", map[string]any{"taskId": huge, "proposalId": "p", "tool": "search"}},
		{"/steward.v1.TaskService/ProposeAction", "proposal_id", map[string]any{"taskId": "t", "proposalId": huge, "tool": "search"}},
		{"/steward.v1.TaskService/DelegateTask", "parent_task_id", map[string]any{"parentTaskId": huge}},
		{"/steward.v1.TaskService/SubmitArtifact", "task_id", map[string]any{"taskId": huge, "name": "n"}},
		{"/steward.v1.TaskService/SubmitArtifact", "action_id", map[string]any{"taskId": "t", "name": "n", "actionId": huge}},
		{"/steward.v1.TaskService/MarkProduced", "task_id", map[string]any{"taskId": huge}},
		{"/steward.v1.TaskService/AcceptTask", "task_id", map[string]any{"taskId": huge}},
		{"/steward.v1.TaskService/ReturnTask", "task_id", map[string]any{"taskId": huge, "reasons": []string{"r"}}},
		{"/steward.v1.GovernanceService/ListApprovals", "task_id", map[string]any{"taskId": huge}},
		{"/steward.v1.GovernanceService/GetApproval", "approval_id", map[string]any{"approvalId": huge}},
		{"/steward.v1.GovernanceService/DecideApproval", "approval_id", map[string]any{"approvalId": huge, "actionHash": "h", "decision": "APPROVAL_DECISION_APPROVE"}},
		{"/steward.v1.GovernanceService/RevokeCredential", "task_id", map[string]any{"taskId": huge, "reason": "r"}},
		{"/steward.v1.GovernanceService/RenewCredential", "task_id", map[string]any{"taskId": huge, "reason": "r"}},
		{"/steward.v1.ToolService/GetTool", "name", map[string]any{"name": huge}},
		{"/steward.v1.ActionService/SettleAction", "action_id", map[string]any{"taskId": "t", "actionId": huge, "state": "SETTLE_STATE_FAILED", "reason": "r"}},
	}
	for _, tt := range tests {
		t.Run(tt.procedure[strings.LastIndex(tt.procedure, "/")+1:]+"/"+tt.field, func(t *testing.T) {
			body, err := json.Marshal(tt.body)
			if err != nil {
				t.Fatal(err)
			}
			resp, err := http.Post(url+tt.procedure, "application/json", bytes.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			answer, err := io.ReadAll(resp.Body)
			if err != nil {
				t.Fatal(err)
			}
			if len(answer) > maxAnswer {
				t.Errorf("the answer is %d bytes, want at most %d", len(answer), maxAnswer)
			}
			var e struct{ Code, Message string }
			if err := json.Unmarshal(answer, &e); err != nil || e.Code != "resource_exhausted" || !strings.HasPrefix(e.Message, tt.field+":") {
				t.Errorf("answer %d %.300s, want resource_exhausted naming %s", resp.StatusCode, answer, tt.field)
			}
		})
	}

	// The streams check their one request as the unary calls do.
	ctx := context.Background()
	c := newClients(url)
	watch, err := c.query.WatchTask(ctx, connect.NewRequest(&stewardv1.WatchTaskRequest{TaskId: huge}))
	if err == nil {
		for watch.Receive() {
		}
		err = watch.Err()
	}
	replay, rerr := c.audit.ReplayTask(ctx, connect.NewRequest(&stewardv1.ReplayTaskRequest{TaskId: huge}))
	if rerr == nil {
		for replay.Receive() {
		}
		rerr = replay.Err()
	}
	for name, err := range map[string]error{"WatchTask": err, "ReplayTask": rerr} {
		if connect.CodeOf(err) != connect.CodeResourceExhausted || len(err.Error()) > maxAnswer || !strings.Contains(err.Error(), "task_id") {
			t.Errorf("%s with a 1 MB id: %.300v, want a short resource_exhausted naming task_id", name, err)
		}
	}
}

// TestListsObeyTheirLimit asks ListTasks for 100,000 statuses, and
// creates a task with one list past the limit deep inside its contract:
// both are resource_exhausted naming the field.
func TestListsObeyTheirLimit(t *testing.T) {
	url := startInProcess(t)
	c := newClients(url)
	ctx := context.Background()
	_, err := c.query.ListTasks(ctx, connect.NewRequest(&stewardv1.ListTasksRequest{Statuses: make([]stewardv1.TaskStatus, 100_000)}))
	if connect.CodeOf(err) != connect.CodeResourceExhausted || !strings.Contains(err.Error(), "statuses") {
		t.Errorf("100,000 statuses: %v, want resource_exhausted naming statuses", err)
	}
	k := contract()
	k.Budget.Milestones = make([]*stewardv1.MilestoneBudget, 257)
	for i := range k.Budget.Milestones {
		k.Budget.Milestones[i] = &stewardv1.MilestoneBudget{MilestoneId: fmt.Sprint("m", i)}
	}
	_, err = c.tasks.CreateTask(ctx, connect.NewRequest(&stewardv1.CreateTaskRequest{RequestId: "lists", Contract: k}))
	if connect.CodeOf(err) != connect.CodeResourceExhausted || !strings.Contains(err.Error(), "contract.budget.milestones") {
		t.Errorf("257 milestones: %v, want resource_exhausted naming contract.budget.milestones", err)
	}
	tools := stewardv1connect.NewToolServiceClient(http.DefaultClient, url)
	_, err = tools.RegisterTool(ctx, connect.NewRequest(&stewardv1.RegisterToolRequest{Contract: &stewardv1.ToolContract{
		Name: "many", Version: "1", RequiredScopes: make([]string, 300),
	}}))
	if connect.CodeOf(err) != connect.CodeResourceExhausted || !strings.Contains(err.Error(), "contract.required_scopes") {
		t.Errorf("300 required scopes: %v, want resource_exhausted naming contract.required_scopes", err)
	}
}
