package e2e_test

import (
	"encoding/base64"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/steward-run/steward/pkg/stewardtest"
)

// subTaskPlanJSON hands research to agent:researcher, whose work user:rev
// accepts, then searches for what the research handed in.
const subTaskPlanJSON = `{"taskId": %q, "requestId": "sub-plan-1", "plan": {
  "version": 1, "ending": "PLAN_ENDING_PRODUCE",
  "steps": [
    {"id": "research", "subTask": {"delegateRef": "agent:researcher", "contract": {
       "intent": "Find last week's incidents", "desiredOutcome": "A list of them, as notes",
       "requesterRef": "user:ana", "accountableOwnerRef": "user:ana", "acceptanceOwnerRef": "user:rev",
       "riskTier": "RISK_TIER_LOW", "allowedTools": ["search"], "budget": {"maxTokens": "1000"}}},
     "expect": "size(result.artifacts) == 1"},
    {"id": "summary", "dependsOn": ["research"], "action": {"tool": "search", "target": "index:summary",
     "paramExprs": {"q": "steps.research.result.status + ':' + steps.research.result.artifacts[0].name"}}}
  ]}}`

// TestPlanSubTaskOverJSON runs a plan whose first step delegates a
// sub-task, on the real binary and over Connect JSON only: the sub-agent,
// signed in as itself, hands in its notes and marks them produced; the
// sub-task's acceptance owner accepts them; the step succeeds with the
// sub-task's result, the next step's parameters read it, and the plan
// marks the parent produced.
func TestPlanSubTaskOverJSON(t *testing.T) {
	tool := stewardtest.StartTool(t)
	h := startSteward(t, setup{tools: governedTools(tool)})
	parentID := governedTask(t, h.agent, "plan-sub")
	if code, resp := postAs(t, agentToken, h.url+"/steward.v1.TaskService/SubmitPlan", fmt.Sprintf(subTaskPlanJSON, parentID)); code != http.StatusOK {
		t.Fatalf("SubmitPlan: HTTP %d %v", code, resp)
	}

	var parent struct {
		Task struct {
			Plan struct {
				Steps []struct {
					StepID    string         `json:"stepId"`
					Status    string         `json:"status"`
					SubTaskID string         `json:"subTaskId"`
					Result    map[string]any `json:"result"`
				} `json:"steps"`
			} `json:"plan"`
			Acceptance []any `json:"acceptance"`
		} `json:"task"`
	}
	getParent := func() (bool, string) {
		code, resp := postAs(t, agentToken, h.url+"/steward.v1.QueryService/GetTask", `{"taskId": "`+parentID+`"}`)
		if code != http.StatusOK {
			return false, fmt.Sprintf("GetTask: HTTP %d %v", code, resp)
		}
		remarshal(t, resp, &parent)
		return true, ""
	}
	var childID string
	stewardtest.Eventually(t, 30*time.Second, func() (bool, string) {
		if ok, why := getParent(); !ok {
			return false, why
		}
		childID = parent.Task.Plan.Steps[0].SubTaskID
		return childID != "", fmt.Sprintf("plan %+v", parent.Task.Plan.Steps)
	})

	// The sub-agent's work, as the sub-agent: it may act on its sub-task
	// once governance has issued the sub-task's credential to it.
	var child struct {
		Task struct {
			Status     string `json:"status"`
			Credential struct {
				Credential struct {
					Principal string `json:"principal"`
				} `json:"credential"`
			} `json:"credential"`
			Contract struct {
				ParentTaskID string `json:"parentTaskId"`
			} `json:"contract"`
		} `json:"task"`
	}
	stewardtest.Eventually(t, 10*time.Second, func() (bool, string) {
		code, resp := postAs(t, subAgentToken, h.url+"/steward.v1.QueryService/GetTask", `{"taskId": "`+childID+`"}`)
		if code != http.StatusOK {
			return false, fmt.Sprintf("GetTask as the sub-agent: HTTP %d %v", code, resp)
		}
		remarshal(t, resp, &child)
		return child.Task.Status == "TASK_STATUS_RUNNING" && child.Task.Credential.Credential.Principal != "", fmt.Sprintf("sub-task %+v", child.Task)
	})
	if child.Task.Credential.Credential.Principal != "agent:researcher" || child.Task.Contract.ParentTaskID != parentID {
		t.Fatalf("sub-task %s: %+v", childID, child.Task)
	}
	notes := base64.StdEncoding.EncodeToString([]byte("INC-7, INC-9"))
	for _, call := range []struct{ method, body string }{
		{"SubmitArtifact", `{"taskId": "` + childID + `", "name": "notes.txt", "mediaType": "text/plain", "content": "` + notes + `", "requestId": "notes-1"}`},
		{"MarkProduced", `{"taskId": "` + childID + `", "requestId": "done-1"}`},
	} {
		if code, resp := postAs(t, subAgentToken, h.url+"/steward.v1.TaskService/"+call.method, call.body); code != http.StatusOK {
			t.Fatalf("%s as the sub-agent: HTTP %d %v", call.method, code, resp)
		}
	}
	if code, resp := postAs(t, reviewerToken, h.url+"/steward.v1.TaskService/AcceptTask", `{"taskId": "`+childID+`", "reason": "complete"}`); code != http.StatusOK {
		t.Fatalf("AcceptTask as the sub-task's owner: HTTP %d %v", code, resp)
	}

	stewardtest.Eventually(t, 30*time.Second, func() (bool, string) {
		if ok, why := getParent(); !ok {
			return false, why
		}
		return len(parent.Task.Acceptance) == 1, fmt.Sprintf("plan %+v", parent.Task.Plan.Steps)
	})
	for _, s := range parent.Task.Plan.Steps {
		if s.Status != "STEP_STATUS_SUCCEEDED" {
			t.Fatalf("step %+v, want succeeded", s)
		}
	}
	res := parent.Task.Plan.Steps[0].Result
	if res["task_id"] != childID || res["status"] != "accepted" {
		t.Fatalf("research's result = %v", res)
	}
	w := tool.Worked()
	if len(w) != 1 || w[0].Target != "index:summary" || !strings.Contains(string(w[0].Params), `"accepted:notes.txt"`) {
		t.Fatalf("the tool worked %+v, want one summary search reading the sub-task's result", w)
	}
}
