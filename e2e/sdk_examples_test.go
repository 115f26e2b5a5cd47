package e2e_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/stewardtest"
	"github.com/steward-run/steward/sdk/go/steward"
)

// TestTheExampleAgentInTypeScriptAndPython runs examples/agent-ts (on
// sdk/ts) and examples/agent-python (on sdk/python) against steward dev,
// built, with the toy store of `examples/agent --fixtures-only` and a
// counting fake model: each syncs three files, leaves after two, and is
// started again. It finishes with the task accepted by its criterion and
// prints the receipt; the model was asked once per decision (3), never
// again for one on the record; the store did each of its 4 steps once.
// Under CI=true a missing node or python3 fails the test; elsewhere it
// skips.
func TestTheExampleAgentInTypeScriptAndPython(t *testing.T) {
	fixtures := filepath.Join(t.TempDir(), "agent")
	if out, err := exec.Command("go", "build", "-o", fixtures, "../examples/agent").CombinedOutput(); err != nil {
		t.Fatalf("build the example agent: %v\n%s", err, out)
	}
	for _, sdk := range []struct {
		name     string
		programs []string
		command  []string
	}{
		{"typescript", []string{"node", "npm"}, []string{"node", "examples/agent-ts/agent.mjs"}},
		{"python", []string{"python3"}, []string{"python3", "examples/agent-python/agent.py"}},
	} {
		t.Run(sdk.name, func(t *testing.T) {
			requireTools(t, sdk.programs...)
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			if sdk.name == "typescript" {
				installTypeScriptClient(ctx, t)
			}
			runExampleOnSDK(ctx, t, fixtures, sdk.command)
		})
	}
}

// runExampleOnSDK runs one example agent, command, twice against its own
// steward dev: killed after two files, then to the end; and checks what
// it did.
func runExampleOnSDK(ctx context.Context, t *testing.T, fixtures string, command []string) {
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	p := startCommand(t, nil, "dev", "--addr", "127.0.0.1:0", "--data", data, "--log-level", "warn")
	t.Cleanup(p.kill)
	model := stewardtest.StartFakeModel(t, nil)
	stores := filepath.Join(dir, "stores")
	store := serveToyStore(ctx, t, fixtures, stores)
	args := slices.Concat(command[1:], []string{"--steward", p.url, "--tokens", filepath.Join(data, "tokens.json"),
		"--store", store + "/store", "--model", model.URL, "--run", "sync-" + filepath.Base(command[1])})
	run := func(more ...string) (string, error) {
		cmd := exec.CommandContext(ctx, command[0], append(slices.Clone(args), more...)...)
		cmd.Dir = ".."
		cmd.Env = append(os.Environ(), "PYTHONDONTWRITEBYTECODE=1")
		out, err := cmd.CombinedOutput()
		return string(out), err
	}

	out, err := run("--exit-after", "2")
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 3 || !strings.Contains(out, "left after 2 files") {
		t.Fatalf("the first run: %v, want it to leave after 2 files:\n%s", err, out)
	}
	if out, err = run(); err != nil {
		t.Fatalf("the second run: %v\n%s", err, out)
	}
	for _, want := range []string{"2 decisions already on the record", "decided copy-file-03.txt", "TASK_STATUS_ACCEPTED",
		"## Decisions", "`copy-file-03.txt`", "(observed)", "HTTP 503 Service Unavailable"} {
		if !strings.Contains(out, want) {
			t.Errorf("the second run did not print %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "decided copy-file-01.txt") {
		t.Errorf("the second run decided again what was on the record:\n%s", out)
	}
	// The model: asked once per decision.
	for key, n := range model.ByKey() {
		if n != 1 {
			t.Errorf("the model was asked %d times for call %s", n, key)
		}
	}
	if n := model.Requests(); n != 3 {
		t.Errorf("the model was asked %d times, want 3: one per decision", n)
	}
	// The store: each step once.
	executed, err := os.ReadFile(filepath.Join(stores, "executed.log"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(executed)), "\n")
	if len(lines) != 4 || len(slices.Compact(slices.Sorted(slices.Values(lines)))) != 4 {
		t.Errorf("the store did %d steps, want 4 different ones (list, 3 copies):\n%s", len(lines), executed)
	}
	// Steward's record agrees.
	taskID := taskLine.FindStringSubmatch(out)
	if taskID == nil {
		t.Fatalf("the agent named no task:\n%s", out)
	}
	c := steward.New(p.url, steward.WithToken(dataToken(t, data, "agent:dev")))
	task, err := c.GetTask(ctx, taskID[1])
	if err != nil {
		t.Fatal(err)
	}
	decisions, err := c.ListDecisions(ctx, taskID[1], "")
	if err != nil {
		t.Fatal(err)
	}
	if task.Status != stewardv1.TaskStatus_TASK_STATUS_ACCEPTED || len(task.Actions) != 7 || len(decisions.Decisions) != 3 {
		t.Errorf("the task is %s with %d actions and %d decisions, want accepted with 7 (list, 3 model calls, 3 copies) and 3",
			task.Status, len(task.Actions), len(decisions.Decisions))
	}
}

// serveToyStore starts `examples/agent --fixtures-only` with three files
// under stores, and returns the URL it prints.
func serveToyStore(ctx context.Context, t *testing.T, fixtures, stores string) string {
	t.Helper()
	cmd := exec.CommandContext(ctx, fixtures, "--fixtures-only", "--files", "3", "--fixtures", "127.0.0.1:0", "--fixtures-dir", stores)
	url := startAnnouncing(t, cmd, "fixtures ")
	return url
}

// installTypeScriptClient runs npm ci in sdk/ts when its dependencies
// are missing.
func installTypeScriptClient(ctx context.Context, t *testing.T) {
	t.Helper()
	sdk, err := filepath.Abs("../sdk/ts")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(sdk, "node_modules")); err != nil {
		runNode(ctx, t, sdk, nil, "npm", "ci", "--no-audit", "--no-fund")
	}
}
