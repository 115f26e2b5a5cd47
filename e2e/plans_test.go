package e2e_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/stewardtest"
)

// planJSON is a plan as an agent sends it with nothing but an HTTP client:
// a search, then a wire that reads its result, then a checkpoint.
const planJSON = `{"taskId": %q, "requestId": "plan-1", "plan": {
  "version": 1, "ending": "PLAN_ENDING_PRODUCE",
  "steps": [
    {"id": "find", "action": {"tool": "search", "target": "index:incidents", "params": {"q": "incidents"}},
     "expect": "has(result.hits)"},
    {"id": "pay", "dependsOn": ["find"], "when": "size(steps.find.result.hits) > 0",
     "action": {"tool": "wire", "target": "acct:42", "paramExprs": {"amount": "size(steps.find.result.hits)"}}},
    {"id": "confirm", "dependsOn": ["pay"],
     "checkpoint": {"question": "Paid?", "choices": ["yes", "no"]}, "expect": "result == 'yes'"}
  ]}}`

// TestSubmitPlanOverJSON submits a plan to the real binary as Connect
// JSON, the way curl would: it is recorded, governance judges it (the
// default plan rule allows one wire), GetTask shows it with its steps as
// what remains, a retry records nothing more, and a plan with a mistake
// is refused naming the step and the field.
func TestSubmitPlanOverJSON(t *testing.T) {
	tool := stewardtest.StartTool(t)
	h := startSteward(t, setup{tools: governedTools(tool)})
	taskID := governedTask(t, h.agent, "plan-task")

	body := fmt.Sprintf(planJSON, taskID)
	for i, wantCreated := range []bool{true, false} {
		code, resp := postAs(t, agentToken, h.url+"/steward.v1.TaskService/SubmitPlan", body)
		if code != http.StatusOK {
			t.Fatalf("SubmitPlan #%d: HTTP %d %v", i+1, code, resp)
		}
		if created, _ := resp["created"].(bool); created != wantCreated {
			t.Fatalf("SubmitPlan #%d: created = %v, want %v", i+1, resp["created"], wantCreated)
		}
	}

	waitServed(t, h.agent.clients, taskID, 10*time.Second, func(tk *stewardv1.Task) (bool, string) {
		return tk.Plan.GetGovernance() != stewardv1.PlanGovernance_PLAN_GOVERNANCE_PENDING, "plan " + tk.Plan.GetGovernance().String()
	})
	code, resp := postAs(t, agentToken, h.url+"/steward.v1.QueryService/GetTask", `{"taskId": "`+taskID+`"}`)
	if code != http.StatusOK {
		t.Fatalf("GetTask: HTTP %d %v", code, resp)
	}
	var got struct {
		Task struct {
			Plan struct {
				Version    int    `json:"version"`
				PlanHash   string `json:"planHash"`
				Governance string `json:"governance"`
				Snapshot   struct {
					Decision string `json:"decision"`
				} `json:"snapshot"`
				Steps []struct {
					StepID string `json:"stepId"`
					Status string `json:"status"`
				} `json:"steps"`
				Plan struct {
					Steps []json.RawMessage `json:"steps"`
				} `json:"plan"`
			} `json:"plan"`
			Progress struct {
				Remaining []string `json:"remaining"`
			} `json:"progress"`
		} `json:"task"`
	}
	remarshal(t, resp, &got)
	p := got.Task.Plan
	if p.Version != 1 || len(p.PlanHash) != 64 || p.Governance != "PLAN_GOVERNANCE_ALLOWED" || p.Snapshot.Decision != "POLICY_DECISION_ALLOW" || len(p.Plan.Steps) != 3 {
		t.Fatalf("GetTask's plan = %+v", p)
	}
	// Allowed, the plan runs: find may have started (or ended, and pay
	// with it, which waits for approval); confirm waits for pay.
	for i, id := range []string{"find", "pay", "confirm"} {
		if p.Steps[i].StepID != id || p.Steps[i].Status == "STEP_STATUS_FAILED" || p.Steps[i].Status == "STEP_STATUS_WITHDRAWN" {
			t.Fatalf("step %d = %+v, want %s under way or to come", i, p.Steps[i], id)
		}
	}
	if p.Steps[2].Status != "STEP_STATUS_PENDING" {
		t.Fatalf("confirm = %+v, want pending behind pay", p.Steps[2])
	}
	if r := strings.Join(got.Task.Progress.Remaining, ","); !strings.HasSuffix("find,pay,confirm", r) || !strings.HasSuffix(r, "confirm") {
		t.Fatalf("remaining = %v, want the plan's steps still to finish", got.Task.Progress.Remaining)
	}

	// Version 2 misspells a dependency's result: refused before anything
	// is recorded, naming the step and the field.
	bad := strings.Replace(strings.Replace(body, `"version": 1`, `"version": 2`, 1), `"requestId": "plan-1"`, `"requestId": "plan-2"`, 1)
	bad = strings.Replace(bad, "size(steps.find.result.hits) > 0", "size(steps.find.reslt.hits) > 0", 1)
	code, resp = postAs(t, agentToken, h.url+"/steward.v1.TaskService/SubmitPlan", bad)
	msg, _ := resp["message"].(string)
	if code != http.StatusBadRequest || resp["code"] != "invalid_argument" || !strings.HasPrefix(msg, "plan.steps[1].when: ") || !strings.Contains(msg, "steps.find.reslt") {
		t.Fatalf("a bad plan: HTTP %d %v, want invalid_argument naming plan.steps[1].when", code, resp)
	}
}

// remarshal turns a decoded JSON value into v.
func remarshal(t *testing.T, from any, v any) {
	t.Helper()
	b, err := json.Marshal(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatal(err)
	}
}
