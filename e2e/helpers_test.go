package e2e_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"connectrpc.com/connect"

	"github.com/steward-run/steward/cmd/steward/app"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/gen/steward/v1/stewardv1connect"
)

// binary is the steward binary built once for the package.
var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "steward-e2e")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "steward")
	build := exec.Command("go", "build", "-o", binary, "../cmd/steward")
	build.Stdout, build.Stderr = os.Stdout, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build steward:", err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// proc is a running steward binary.
type proc struct {
	cmd *exec.Cmd
	url string
}

var servingLine = regexp.MustCompile(`serving Connect, gRPC and gRPC-Web on (http://\S+)`)

// startBinary runs `steward dev` on a free loopback port with its data in
// dataDir and waits until it says where it serves.
func startBinary(t *testing.T, dataDir string, flags ...string) *proc {
	t.Helper()
	return startBinaryEnv(t, dataDir, nil, flags...)
}

// startBinaryEnv is startBinary with env ("KEY=value") added to the
// process's environment; a later value of a key wins.
func startBinaryEnv(t *testing.T, dataDir string, env []string, flags ...string) *proc {
	t.Helper()
	return startCommand(t, env, append([]string{"dev", "--addr", "127.0.0.1:0", "--data", dataDir, "--log-level", "warn"}, flags...)...)
}

// startCommand runs the binary with args and waits until it says where
// it serves.
func startCommand(t *testing.T, env []string, args ...string) *proc {
	t.Helper()
	cmd := exec.Command(binary, args...)
	if len(env) > 0 {
		cmd.Env = append(os.Environ(), env...)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = &testWriter{t: t}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &proc{cmd: cmd}
	t.Cleanup(func() { p.kill() })
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if m := servingLine.FindStringSubmatch(sc.Text()); m != nil {
				found <- m[1]
			}
		}
	}()
	select {
	case p.url = <-found:
	case <-time.After(20 * time.Second):
		t.Fatal("steward dev did not say it was serving within 20s")
	}
	return p
}

// kill sends SIGKILL: no shutdown code runs.
func (p *proc) kill() {
	if p.cmd.ProcessState == nil {
		_ = p.cmd.Process.Kill()
		_ = p.cmd.Wait()
	}
}

// stop sends SIGTERM and waits for a clean exit.
func (p *proc) stop(t *testing.T) {
	t.Helper()
	_ = p.cmd.Process.Signal(os.Interrupt)
	done := make(chan error, 1)
	go func() { done <- p.cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("steward did not exit cleanly: %v", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("steward did not stop within 15s of SIGINT")
	}
}

// startInProcess runs the same Main in this process: faster, for tests
// that need no SIGKILL.
func startInProcess(t *testing.T) string {
	t.Helper()
	m := app.NewServer(io.Discard, &testWriter{t: t})
	if err := m.ParseFlags("dev", []string{"--addr", "127.0.0.1:0", "--data", t.TempDir(), "--log-level", "warn"}); err != nil {
		t.Fatal(err)
	}
	if err := m.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Close)
	return m.URL()
}

// clients holds a Connect client for each service, all speaking one protocol.
type clients struct {
	tasks stewardv1connect.TaskServiceClient
	query stewardv1connect.QueryServiceClient
	audit stewardv1connect.AuditServiceClient
}

func newClients(url string, opts ...connect.ClientOption) clients {
	hc := &http.Client{Timeout: 30 * time.Second}
	return clients{
		tasks: stewardv1connect.NewTaskServiceClient(hc, url, opts...),
		query: stewardv1connect.NewQueryServiceClient(hc, url, opts...),
		audit: stewardv1connect.NewAuditServiceClient(hc, url, opts...),
	}
}

// contract returns a valid contract; tests change what they need.
func contract() *stewardv1.TaskContract {
	return &stewardv1.TaskContract{
		Intent:              "Summarise last week's incidents",
		DesiredOutcome:      "A one-page summary for the on-call review",
		RequesterRef:        "user:ana",
		AccountableOwnerRef: "user:ana",
		RiskTier:            stewardv1.RiskTier_RISK_TIER_LOW,
		Budget:              &stewardv1.Budget{MaxTokens: 50_000},
		AllowedTools:        []string{"search"},
	}
}

func createTask(t *testing.T, c clients, requestID string) *stewardv1.Task {
	t.Helper()
	resp, err := c.tasks.CreateTask(context.Background(), connect.NewRequest(&stewardv1.CreateTaskRequest{RequestId: requestID, Contract: contract()}))
	if err != nil {
		t.Fatal(err)
	}
	return resp.Msg.Task
}

// waitStatus polls GetTask until the task has status want.
func waitStatus(t *testing.T, c clients, taskID string, want stewardv1.TaskStatus) *stewardv1.Task {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err := c.query.GetTask(context.Background(), connect.NewRequest(&stewardv1.GetTaskRequest{TaskId: taskID}))
		if err != nil {
			t.Fatal(err)
		}
		if resp.Msg.Task.Status == want {
			return resp.Msg.Task
		}
		if time.Now().After(deadline) {
			t.Fatalf("task %s is %v, want %v", taskID, resp.Msg.Task.Status, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitStarted waits until the task runs and holds its credential: the two
// reactions to its creation, which the log may record in either order and
// after later commands. Tests that count or order a task's events start here.
func waitStarted(t *testing.T, c clients, taskID string) {
	t.Helper()
	waitStatus(t, c, taskID, stewardv1.TaskStatus_TASK_STATUS_RUNNING)
	waitCredential(t, c, taskID)
}

// testWriter sends a process's log lines to the test log.
type testWriter struct{ t *testing.T }

func (w *testWriter) Write(p []byte) (int, error) {
	w.t.Logf("%s", p)
	return len(p), nil
}

func sleepBriefly() { time.Sleep(10 * time.Millisecond) }
