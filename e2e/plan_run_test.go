package e2e_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/steward-run/steward/pkg/stewardtest"
)

// diamondJSON is a diamond, a → (b, c) → d, of searches: b and c read a's
// result, d reads both, and a checks its own. Beside it, a foreach over
// a list in a's result, and a one-second wait before d.
const diamondJSON = `{"taskId": %q, "requestId": "diamond-1", "plan": {
  "version": 1, "ending": "PLAN_ENDING_PRODUCE",
  "steps": [
    {"id": "a", "action": {"tool": "search", "target": "index:a", "params": {"q": "incidents", "more": ["x", "y", "z"]}},
     "expect": "result.ok == true"},
    {"id": "b", "dependsOn": ["a"], "action": {"tool": "search", "target": "index:b", "paramExprs": {"q": "steps.a.result.echo.q + '-left'"}}},
    {"id": "c", "dependsOn": ["a"], "action": {"tool": "search", "target": "index:c", "paramExprs": {"q": "steps.a.result.echo.q + '-right'"}}},
    {"id": "each", "dependsOn": ["a"], "foreach": {"over": "steps.a.result.echo.more", "maxItems": 3,
     "body": {"action": {"tool": "search", "targetExpr": "'index:' + item", "paramExprs": {"q": "item"}}}}, "expect": "result.echo.q == item"},
    {"id": "pause", "dependsOn": ["a"], "wait": {"duration": "1s"}},
    {"id": "d", "dependsOn": ["b", "c", "each", "pause"], "action": {"tool": "search", "target": "index:d",
     "paramExprs": {"q": "steps.b.result.echo.q + '+' + steps.c.result.echo.q + '+' + string(size(steps.each.result))"}}}
  ]}}`

// TestPlanRunsOverJSON runs a small diamond plan on the real binary, as
// an agent with nothing but an HTTP client would: submitted, judged, each
// step's action proposed, governed and run by the tool once (a foreach's
// once per item), the wait ended by the control plane's timer, the last
// step's parameters computed from the branches, and the task produced.
func TestPlanRunsOverJSON(t *testing.T) {
	tool := stewardtest.StartTool(t)
	h := startSteward(t, setup{tools: governedTools(tool), nats: true})
	taskID := governedTask(t, h.agent, "plan-run")
	if code, resp := postAs(t, agentToken, h.url+"/steward.v1.TaskService/SubmitPlan", fmt.Sprintf(diamondJSON, taskID)); code != http.StatusOK {
		t.Fatalf("SubmitPlan: HTTP %d %v", code, resp)
	}
	checkDiamondRan(t, tool, h.url, agentToken, taskID)
}

// checkDiamondRan waits until the diamondJSON plan of taskID has produced
// the task, and checks what ran: every step succeeded with its actions,
// the tool did each call once, and d's parameters came from the branches.
func checkDiamondRan(t *testing.T, tool *stewardtest.Tool, url, token, taskID string) {
	t.Helper()
	checkPlanRan(t, tool, url, token, taskID, map[string]int{"a": 1, "b": 1, "c": 1, "each": 3, "pause": 0, "d": 1})
}

// checkPlanRan is checkDiamondRan of a plan whose steps take actions
// (step id to how many actions it runs).
func checkPlanRan(t *testing.T, tool *stewardtest.Tool, url, token, taskID string, actions map[string]int) {
	t.Helper()
	var got struct {
		Task struct {
			Status string `json:"status"`
			Plan   struct {
				Steps []struct {
					StepID    string   `json:"stepId"`
					Status    string   `json:"status"`
					ActionIDs []string `json:"actionIds"`
				} `json:"steps"`
			} `json:"plan"`
			Acceptance []any `json:"acceptance"`
		} `json:"task"`
	}
	stewardtest.Eventually(t, 30*time.Second, func() (bool, string) {
		code, resp := postAs(t, token, url+"/steward.v1.QueryService/GetTask", `{"taskId": "`+taskID+`"}`)
		if code != http.StatusOK {
			return false, fmt.Sprintf("GetTask: HTTP %d %v", code, resp)
		}
		remarshal(t, resp, &got)
		return len(got.Task.Acceptance) == 1, fmt.Sprintf("task %s, plan %+v", got.Task.Status, got.Task.Plan.Steps)
	})
	calls := 0
	for _, n := range actions {
		calls += n
	}
	if len(got.Task.Plan.Steps) != len(actions) {
		t.Fatalf("plan steps %+v, want %d", got.Task.Plan.Steps, len(actions))
	}
	for _, s := range got.Task.Plan.Steps {
		if s.Status != "STEP_STATUS_SUCCEEDED" || len(s.ActionIDs) != actions[s.StepID] {
			t.Fatalf("step %+v, want succeeded with %d actions", s, actions[s.StepID])
		}
	}
	if w := tool.Worked(); len(w) != calls {
		t.Fatalf("the tool worked %d times, want %d (one per action): %+v", len(w), calls, w)
	}
	for _, w := range tool.Worked() {
		if n := tool.Executions(w.Key); n != 1 {
			t.Fatalf("key %s executed %d times", w.Key, n)
		}
		if w.Target == "index:d" && !strings.Contains(string(w.Params), `"incidents-left+incidents-right+3"`) {
			t.Fatalf("d's parameters = %s, want both branches' results", w.Params)
		}
	}
}
