package e2e_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/steward-run/steward/pkg/stewardtest"
	"github.com/steward-run/steward/sdk/go/steward"
)

// TestTheExampleAgentSurvivesItsLoss runs examples/agent, built, against
// steward dev, built, with its default tokens: it syncs ten files, is
// killed (SIGKILL) after four, its working directory wiped, and started
// again; it finishes with the task accepted by its criteria and prints
// the receipt. The model (the test's fake, counting) was asked once per
// decision; the store did each step once, though one copy failed first
// with a 503 and was retried by Steward; the receipt shows the decision
// trail.
func TestTheExampleAgentSurvivesItsLoss(t *testing.T) {
	dir := t.TempDir()
	agentBin := filepath.Join(dir, "agent")
	if out, err := exec.Command("go", "build", "-o", agentBin, "../examples/agent").CombinedOutput(); err != nil {
		t.Fatalf("build the example agent: %v\n%s", err, out)
	}
	data := filepath.Join(dir, "data")
	p := startCommand(t, nil, "dev", "--addr", "127.0.0.1:0", "--data", data, "--log-level", "warn")
	t.Cleanup(p.kill)
	model := stewardtest.StartFakeModel(t, nil)
	work, stores := filepath.Join(dir, "work"), filepath.Join(dir, "stores")
	args := []string{"--steward", p.url, "--tokens", filepath.Join(data, "tokens.json"), "--dir", work, "--run", "sync-e2e",
		"--model", model.URL, "--fixtures", freeAddr(t), "--fixtures-dir", stores}

	first := exec.Command(agentBin, append(args, "--crash-after", "4")...)
	out, err := first.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != -1 || !strings.Contains(string(out), "killed after 4 files") {
		t.Fatalf("the first run: %v, want killed after 4 files:\n%s", err, out)
	}
	if err := os.RemoveAll(work); err != nil {
		t.Fatal(err)
	}
	out, err = exec.Command(agentBin, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("the restarted run: %v\n%s", err, out)
	}
	printed := string(out)
	for _, want := range []string{"4 decisions already on the record", "TASK_STATUS_ACCEPTED", "## Decisions", "`copy-file-10.txt`", "(observed)",
		"HTTP 503 Service Unavailable"} {
		if !strings.Contains(printed, want) {
			t.Errorf("the restarted run did not print %q:\n%s", want, printed)
		}
	}
	if strings.Contains(printed, "decided copy-file-01.txt") {
		t.Errorf("the restarted run decided again what was on the record:\n%s", printed)
	}

	// The model: asked once per decision, ten in all.
	for key, n := range model.ByKey() {
		if n != 1 {
			t.Errorf("the model was asked %d times for call %s", n, key)
		}
	}
	if n := model.Requests(); n != 10 {
		t.Errorf("the model was asked %d times, want 10: one per decision", n)
	}
	// The store: each step done once.
	executed, err := os.ReadFile(filepath.Join(stores, "executed.log"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(executed)), "\n")
	if len(lines) != 12 || len(slices.Compact(slices.Sorted(slices.Values(lines)))) != 12 {
		t.Errorf("the store did %d steps, want 12 different ones (list, 10 copies, publish):\n%s", len(lines), executed)
	}
	// Steward's record agrees.
	taskID := taskLine.FindStringSubmatch(printed)
	if taskID == nil {
		t.Fatalf("the agent named no task:\n%s", printed)
	}
	c := steward.New(p.url, steward.WithToken(dataToken(t, data, "agent:dev")))
	resp, err := c.ListDecisions(context.Background(), taskID[1], "")
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Decisions) != 10 {
		t.Errorf("%d decisions on the record, want 10", len(resp.Decisions))
	}
}

// taskLine is how the example agent names its task.
var taskLine = regexp.MustCompile(`(?m)^task ([0-9a-f]+):`)
