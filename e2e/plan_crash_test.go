package e2e_test

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
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
	taskID string
}

// startDiamond starts the binary, creates a task and submits the diamond.
// The kill may land while a step's call is out: its outcome is then
// unknown, and the tool's status query settles it (without one, a person
// would: Steward never guesses).
func startDiamond(t *testing.T, tool *stewardtest.Tool, env []string) (*diamondCrash, *proc) {
	t.Helper()
	dir := t.TempDir()
	tools := governedTools(tool)
	tools[0] = strings.Replace(tools[0], `"http": {"url": `, `"statusQuery": true, "http": {"statusUrl": "`+tool.URL+`/status", "url": `, 1)
	d := &diamondCrash{tool: tool, data: filepath.Join(dir, "data"), flags: []string{"--nats-listen", stewardtest.FreeAddr(t),
		"--tools", writeFile(t, dir, "tools.json", `{"tools": [`+strings.Join(tools, ",\n")+`]}`)}}
	p := startBinaryEnv(t, d.data, env, d.flags...)
	k := contract()
	k.AllowedTools = []string{"search"}
	resp, err := newClients(p.url).tasks.CreateTask(context.Background(), connect.NewRequest(&stewardv1.CreateTaskRequest{RequestId: "plan-crash", Contract: k}))
	if err != nil {
		t.Fatal(err)
	}
	d.taskID = resp.Msg.Task.Contract.TaskId
	waitStarted(t, newClients(p.url), d.taskID)
	if code, resp := postAs(t, "", p.url+"/steward.v1.TaskService/SubmitPlan", fmt.Sprintf(diamondJSON, d.taskID)); code != http.StatusOK {
		t.Fatalf("SubmitPlan: HTTP %d %v", code, resp)
	}
	return d, p
}

// restartAndCheck starts the binary again on the same data, nothing
// armed, and checks the plan finishes with every call made once.
func (d *diamondCrash) restartAndCheck(t *testing.T) {
	t.Helper()
	p := startBinaryEnv(t, d.data, []string{crashpoint.EnvVar + "="}, d.flags...)
	checkDiamondRan(t, d.tool, p.url, "", d.taskID)
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
