package e2e_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"connectrpc.com/connect"

	"github.com/steward-run/steward/pkg/crashpoint"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/stewardtest"
)

// diamondCrash runs the diamondJSON plan on the real binary started with
// env, on a data directory a restart can reuse: restart starts it again
// with no crash point armed.
type diamondCrash struct {
	tool   *stewardtest.Tool
	data   string
	flags  []string
	token  string // the agent's, when the flags name a tokens file
	taskID string
}

// startDiamond starts the binary, creates a task and submits the diamond.
// The kill may land while a step's call is out: its outcome is then
// unknown, and the tool's status query settles it (without one, a person
// would: Steward never guesses).
func startDiamond(t *testing.T, tool *stewardtest.Tool, env []string, extra ...string) (*diamondCrash, *proc) {
	t.Helper()
	return startPlan(t, tool, env, diamondJSON, extra...)
}

// startPlan is startDiamond with plan planJSON (a format taking the task
// id).
func startPlan(t *testing.T, tool *stewardtest.Tool, env []string, planJSON string, extra ...string) (*diamondCrash, *proc) {
	t.Helper()
	dir := t.TempDir()
	tools := governedTools(tool)
	tools[0] = strings.Replace(tools[0], `"http": {"url": `, `"statusQuery": true, "http": {"statusUrl": "`+tool.URL+`/status", "url": `, 1)
	d := &diamondCrash{tool: tool, data: filepath.Join(dir, "data"), flags: []string{"--nats-listen", stewardtest.FreeAddr(t),
		"--tools", writeFile(t, dir, "tools.json", `{"tools": [`+strings.Join(tools, ",\n")+`]}`)}}
	d.flags = append(d.flags, extra...)
	p := startBinaryEnv(t, d.data, env, d.flags...)
	c := newClients(p.url)
	if slices.Contains(extra, "--auth") {
		d.token = agentToken
		c = withToken(p.url, agentToken).clients
	}
	k := contract()
	k.AllowedTools = []string{"search", "wire"}
	k.AuthorizerRef = "user:bo"
	resp, err := c.tasks.CreateTask(context.Background(), connect.NewRequest(&stewardv1.CreateTaskRequest{RequestId: "plan-crash", Contract: k}))
	if err != nil {
		t.Fatal(err)
	}
	d.taskID = resp.Msg.Task.Contract.TaskId
	waitStarted(t, c, d.taskID)
	if code, resp := postAs(t, d.token, p.url+"/steward.v1.TaskService/SubmitPlan", fmt.Sprintf(planJSON, d.taskID)); code != http.StatusOK {
		t.Fatalf("SubmitPlan: HTTP %d %v", code, resp)
	}
	return d, p
}

// restartAndCheck starts the binary again on the same data, nothing
// armed, and checks the plan finishes with every call made once.
func (d *diamondCrash) restartAndCheck(t *testing.T) {
	t.Helper()
	checkDiamondRan(t, d.tool, d.restart(t).url, d.token, d.taskID)
}

// restart starts the binary again on the same data, nothing armed.
func (d *diamondCrash) restart(t *testing.T) *proc {
	t.Helper()
	return startBinaryEnv(t, d.data, []string{crashpoint.EnvVar + "="}, d.flags...)
}

// TestPlanSurvivesKillAfterProposal: kill -9 between a step's proposal and
// the plan's record of it, then a restart on the same data: the plan
// finishes, every action executed exactly once.
func TestPlanSurvivesKillAfterProposal(t *testing.T) {
	d, p := startDiamond(t, stewardtest.StartTool(t), []string{crashpoint.EnvVar + "=" + crashpoint.AfterProposal})
	// Governance allows the plan; step a's proposal kills the binary.
	waitCrash(t, p, crashpoint.AfterProposal, nil)
	d.restartAndCheck(t)
}

// TestPlanSurvivesKillWithBranchesInFlight: kill -9 while the tool holds
// both diamond branches' calls (b and c, done and not answered), then a
// restart: the status query settles both, and the plan finishes.
func TestPlanSurvivesKillWithBranchesInFlight(t *testing.T) {
	held := stewardtest.Answer{Work: true, Hold: stewardtest.HoldUntilRelease}
	// a answers; b, c and each's three items are held; d, after them all,
	// answers.
	tool := stewardtest.StartTool(t).Script("/search", stewardtest.OK, held, held, held, held, held)
	d, p := startDiamond(t, tool, []string{crashpoint.EnvVar + "="})
	stewardtest.Eventually(t, crashWait, func() (bool, string) {
		targets := map[string]bool{}
		for _, w := range tool.Worked() {
			targets[w.Target] = true
		}
		return targets["index:b"] && targets["index:c"] && tool.Together("/search") >= 2, fmt.Sprintf("worked %+v", tool.Worked())
	})
	_ = p.cmd.Process.Kill()
	waitCrash(t, p, "kill -9 with b and c in flight", nil)
	tool.Release()
	d.restartAndCheck(t)
}

// TestPlanSurvivesKillDuringForeach: kill -9 in the middle of a foreach
// expansion, one item's action proposed and the next not, then a restart:
// the expansion proposes the same actions again, and the plan finishes.
func TestPlanSurvivesKillDuringForeach(t *testing.T) {
	d, p := startDiamond(t, stewardtest.StartTool(t), []string{crashpoint.EnvVar + "=" + crashpoint.DuringForeach})
	waitCrash(t, p, crashpoint.DuringForeach, nil)
	d.restartAndCheck(t)
}

// TestPlanSurvivesKillAwaitingApproval: kill -9 while the plan waits for
// its approval (a policy that asks a person about every plan), then a
// restart: the authorizer approves, and the plan runs to the end.
func TestPlanSurvivesKillAwaitingApproval(t *testing.T) {
	dir := t.TempDir()
	policy := filepath.Join(dir, "policy")
	for _, name := range []string{"steward.rego", "plan.rego"} {
		rego, err := os.ReadFile("../services/governance/policy/default/" + name)
		if err != nil {
			t.Fatal(err)
		}
		if name == "plan.rego" {
			rego = append(rego, "\napproval_reasons contains \"every plan here is approved by a person\"\n"...)
		}
		writeFile(t, policy, name, string(rego))
	}
	d, p := startDiamond(t, stewardtest.StartTool(t), []string{crashpoint.EnvVar + "="},
		"--policy-dir", policy, "--auth", writeFile(t, dir, "tokens.json", tokensFile))
	waiting := planGoverned(t, withToken(p.url, agentToken), d.taskID, 1, func(p *stewardv1.PlanState) bool { return p.Approval != nil })
	_ = p.cmd.Process.Kill()
	waitCrash(t, p, "kill -9 awaiting the plan's approval", nil)

	p = d.restart(t)
	if _, err := withToken(p.url, approverToken).governance.DecideApproval(context.Background(), connect.NewRequest(&stewardv1.DecideApprovalRequest{
		ApprovalId: waiting.Approval.ApprovalId, PlanHash: waiting.PlanHash, Decision: stewardv1.ApprovalDecision_APPROVAL_DECISION_APPROVE})); err != nil {
		t.Fatal(err)
	}
	checkDiamondRan(t, d.tool, p.url, d.token, d.taskID)
}

// TestPlanSurvivesKillDuringRevision: kill -9 once a revision of the
// running diamond is on the log and before the driver has acted on it,
// then a restart: the driver takes up the revision, and the revised plan
// finishes, every call made once. The revision adds step e and withdraws
// step w, whose wire waits for its authorizer's approval: after the
// restart w's action is withdrawn and the wire tool never called.
func TestPlanSurvivesKillDuringRevision(t *testing.T) {
	// a's call is done and held, so v1 is in force and mid-run when the
	// revision comes.
	tool := stewardtest.StartTool(t).Script("/search", stewardtest.Answer{Work: true, Hold: stewardtest.HoldUntilRelease})
	wire := `"steps": [
    {"id": "w", "action": {"tool": "wire", "target": "acct:42", "params": {"amount": 5},
     "rationale": {"expectedImpact": "pays 5", "rollbackPlan": "none: a wire is final"}}},`
	d, p := startPlan(t, tool, []string{crashpoint.EnvVar + "=" + crashpoint.DuringRevision}, strings.Replace(diamondJSON, `"steps": [`, wire, 1))
	c := newClients(p.url)
	var w *stewardv1.Action
	waitServed(t, c, d.taskID, crashWait, func(tk *stewardv1.Task) (bool, string) {
		for _, a := range tk.Actions {
			if a.Tool == "wire" {
				w = a
			}
		}
		return len(tool.Worked()) == 1 && w.GetStatus() == stewardv1.ActionStatus_ACTION_STATUS_AWAITING_APPROVAL,
			fmt.Sprintf("a's call worked %d times; w's wire %v", len(tool.Worked()), w.GetStatus())
	})
	revised := strings.NewReplacer(`"version": 1`, `"version": 2`, `"diamond-1"`, `"diamond-2"`,
		`"steps": [`, `"steps": [
    {"id": "e", "dependsOn": ["a"], "action": {"tool": "search", "target": "index:e", "params": {"q": "more"}}},`).Replace(diamondJSON)
	// The kill cuts the call short: its answer is not the point.
	if resp, err := http.Post(p.url+"/steward.v1.TaskService/SubmitPlan", "application/json", strings.NewReader(fmt.Sprintf(revised, d.taskID))); err == nil {
		_ = resp.Body.Close()
	}
	waitCrash(t, p, crashpoint.DuringRevision, nil)
	tool.Release()
	url := d.restart(t).url
	checkPlanRan(t, tool, url, d.token, d.taskID, map[string]int{"a": 1, "b": 1, "c": 1, "each": 3, "pause": 0, "d": 1, "e": 1})
	if _, a := waitAction(t, newClients(url), d.taskID, w.ActionId, stewardv1.ActionStatus_ACTION_STATUS_WITHDRAWN); a.Permit != nil || tool.CallsTo("/wire") != 0 {
		t.Fatalf("withdrawn step w's action: permit %v, the wire tool called %d times; want neither", a.Permit, tool.CallsTo("/wire"))
	}
}
