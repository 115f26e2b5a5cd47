package e2e_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"syscall"
	"testing"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/steward-run/steward/pkg/crashpoint"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/stewardtest"
)

// How the crash matrix runs its scenarios against a Steward that a
// crashStarter starts: the dev binary (TestCrashMatrix) or the planes on a
// cluster (TestClusterCrashMatrix). Only how Steward is started and
// restarted differs between them.

// crashStarter starts Steward for one run of a scenario: with point armed
// in the process that reaches it, the crash tools served by tool, and the
// execution worker named worker (a default name of its own when "").
type crashStarter func(t *testing.T, tool *stewardtest.Tool, point, worker string) crashStarted

// crashStarted is Steward as a crashStarter started it.
type crashStarted struct {
	c clients
	// watch is the URL of the QueryService the run watches the task on.
	watch string
	// armed is the process that reaches the point and dies.
	armed *proc
	// restart starts the armed process anew, with nothing armed and the
	// execution worker named worker, and returns the clients from then on.
	restart func(t *testing.T, worker string) clients
}

// runCrashMatrix runs every scenario runs times against Steward as start
// starts it, and logs the figures.
func runCrashMatrix(t *testing.T, runs int, start crashStarter) {
	scenarios := crashScenarios()
	var covered []string
	for _, sc := range scenarios {
		if !slices.Contains(covered, sc.point) {
			covered = append(covered, sc.point)
		}
	}
	if !slices.Equal(covered, crashpoint.Points) {
		t.Fatalf("the matrix covers %v; the crash points are %v", covered, crashpoint.Points)
	}
	crashStats.reset()
	for _, sc := range scenarios {
		t.Run(sc.nameOf(), func(t *testing.T) {
			for i := range runs {
				t.Run(fmt.Sprintf("run-%d", i+1), func(t *testing.T) { runCrash(t, sc, i+1, start) })
			}
		})
	}
	lines := append([]string{crashStats.summary()}, crashStats.pointSummaries()...)
	for _, line := range lines {
		t.Log(line)
		if testing.Verbose() {
			fmt.Println(line)
		}
	}
}

// crashRuns is the environment variable name's number, or def.
func crashRuns(t *testing.T, name string, def int) int {
	t.Helper()
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		t.Fatalf("%s=%q: want a positive number", name, s)
	}
	return n
}

// crashRun is one run of one scenario.
type crashRun struct {
	tool   *stewardtest.Tool
	taskID string
	c      clients
	// lastErr is the last RPC error while the binary was dying; it is
	// reported if the binary does not die.
	lastErr error
}

func runCrash(t *testing.T, sc crashScenario, run int, start crashStarter) {
	var res crashResult
	defer func() { crashStats.add(sc.nameOf(), res, t.Failed()) }()
	r := &crashRun{tool: startCrashTool(t)}
	s := start(t, r.tool, sc.point, sc.workers[0])
	r.c = s.c
	r.taskID = crashTask(t, r.c, fmt.Sprintf("crash-%s-%d", sc.nameOf(), run))
	w := watchEvents(t, s.watch, r.taskID)
	sc.drive(t, r)
	waitCrash(t, s.armed, sc.point, r.lastErr)
	seen := w.close()

	// The restart: same data, nothing armed.
	restart := time.Now()
	r.c = s.restart(t, sc.workers[1])
	pollTask(t, r.c, r.taskID, sc.recovered)
	res.recovery = time.Since(restart)
	if sc.within > 0 && res.recovery > sc.within {
		t.Errorf("recovered %s after the restart; want within %s", res.recovery.Round(time.Millisecond), sc.within)
	}

	history, tk := settledHistory(t, r.c, r.taskID)
	res.lost = checkHistory(t, r, tk, history, seen)
	res.duplicates = checkTool(t, r, tk)
	sc.check(t, r, tk, history)
	verifyChain(t, r.c, r.taskID, len(history))

	progress := "no event needed"
	if d, ok := firstProgress(history, restart); ok {
		progress = "next event " + d.Round(time.Millisecond).String() + " after restart"
	}
	t.Logf("%s run %d: %d events seen before the crash (to sequence %d), %d on the log after; %s; recovered %s after restart",
		sc.nameOf(), run, len(seen), lastSequence(seen), len(history), progress, res.recovery.Round(time.Millisecond))
}

// crashResult is what one run measured; recovery is zero if the task
// never recovered.
type crashResult struct {
	duplicates, lost int
	recovery         time.Duration
}

// crashFlags writes the tools file for tool and returns the flags for it.
func crashFlags(t *testing.T, tool *stewardtest.Tool) []string {
	t.Helper()
	flags := []string{"--tools", writeFile(t, t.TempDir(), "tools.json", crashToolsFile(tool.URL))}
	if sync := os.Getenv("STEWARD_CRASH_SYNC"); sync != "" {
		flags = append(flags, "--sync", sync) // docs/crash-matrix.md: the matrix at each durability
	}
	return flags
}

// crashTask creates a running task that may use the crash tools and
// compensates when it fails.
func crashTask(t *testing.T, c clients, requestID string) string {
	t.Helper()
	k := contract()
	k.AllowedTools = []string{"put", "slowput", "flakyput", "reserve", "release"}
	k.RecoveryPolicy = &stewardv1.RecoveryPolicy{Mode: stewardv1.RecoveryMode_RECOVERY_MODE_COMPENSATE}
	// A process just started may answer unavailable while its planes
	// catch up with the log (on a cluster, its quota count): a client
	// asks again, as the API asks; any other answer ends the wait.
	var resp *connect.Response[stewardv1.CreateTaskResponse]
	var err error
	stewardtest.Eventually(t, 30*time.Second, func() (bool, string) {
		resp, err = c.tasks.CreateTask(context.Background(), connect.NewRequest(&stewardv1.CreateTaskRequest{RequestId: requestID, Contract: k}))
		return connect.CodeOf(err) != connect.CodeUnavailable, fmt.Sprintf("CreateTask: %v", err)
	})
	if err != nil {
		t.Fatal(err)
	}
	id := resp.Msg.Task.Contract.TaskId
	waitStatus(t, c, id, stewardv1.TaskStatus_TASK_STATUS_RUNNING)
	return id
}

// propose proposes a call of tool on the armed binary. The binary may die
// before it answers; the error is kept for the report if it does not.
func (r *crashRun) propose(t *testing.T, proposalID, tool string) *stewardv1.Action {
	t.Helper()
	params, err := structpb.NewStruct(map[string]any{"item": proposalID})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := r.c.tasks.ProposeAction(ctx, connect.NewRequest(&stewardv1.ProposeActionRequest{
		TaskId: r.taskID, ProposalId: proposalID, Tool: tool, Target: "shelf:" + proposalID, Params: params,
	}))
	if err != nil {
		r.lastErr = fmt.Errorf("propose %s: %w", proposalID, err)
		return nil
	}
	return resp.Msg.Action
}

// driveCompensation makes two reservations, one after the other, then
// fails the task: it compensates them, newest first, and the binary dies
// when the first compensation is proposed.
func driveCompensation(t *testing.T, r *crashRun) {
	t.Helper()
	for _, id := range []string{"reserve-1", "reserve-2"} {
		a := r.propose(t, id, "reserve")
		if a == nil {
			t.Fatalf("%v", r.lastErr)
		}
		waitAction(t, r.c, r.taskID, a.ActionId, stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := r.c.tasks.FailTask(ctx, connect.NewRequest(&stewardv1.FailTaskRequest{
		TaskId: r.taskID, RequestId: "fail-" + r.taskID, Reason: "crash matrix: undo the reservations",
	}))
	if err != nil {
		r.lastErr = fmt.Errorf("fail task: %w", err)
	}
}

// waitCrash waits for the armed binary to kill itself.
func waitCrash(t *testing.T, p *proc, point string, lastErr error) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- p.cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(crashWait):
		_ = p.cmd.Process.Kill()
		<-done
		t.Fatalf("steward did not reach crash point %s within %s (last RPC error: %v)", point, crashWait, lastErr)
	}
	ws, ok := p.cmd.ProcessState.Sys().(syscall.WaitStatus)
	if !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("steward ended with %v, want SIGKILL at crash point %s", p.cmd.ProcessState, point)
	}
}

// pollTask waits until done says the task is there. Errors are
// tolerated until the deadline: the restarted binary may still be
// rebuilding its projection.
func pollTask(t *testing.T, c clients, taskID string, done func(*stewardv1.Task) bool) *stewardv1.Task {
	t.Helper()
	return waitServed(t, c, taskID, recoveryWait, func(tk *stewardv1.Task) (bool, string) {
		return done(tk), fmt.Sprintf("did not recover within %s; it is %v, actions:\n%s", recoveryWait, tk.GetStatus(), describeActions(tk))
	})
}
