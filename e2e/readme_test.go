package e2e_test

import (
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

// shellBlocks returns the ```sh blocks of a Markdown file, in order; a
// block fenced ```sh norun (starting Steward, the test command) is not
// one to run, and says so where a reader sees it.
func shellBlocks(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var blocks []string
	for _, m := range regexp.MustCompile("(?ms)^```sh\\n(.*?)^```$").FindAllStringSubmatch(string(b), -1) {
		blocks = append(blocks, m[1])
	}
	return blocks
}

// TestReadmeRuns runs every shell block of the README, in order, in one
// bash session, against the real binary started as the README's set-up
// says (steward dev with the example tools): a new user following it
// gets each answer it shows, and a block that fails fails the test with
// the server's message.
func TestReadmeRuns(t *testing.T) {
	requireTools(t, "bash", "curl", "jq")
	blocks := shellBlocks(t, "../README.md")
	if len(blocks) == 0 {
		t.Fatal("the README has no shell block to run")
	}
	data := t.TempDir()
	p := startCommand(t, nil, "dev", "--addr", "127.0.0.1:0", "--data", data, "--log-level", "warn", "--tools", "../examples/tools.json")
	cmd := exec.Command("bash", "-c", "set -euo pipefail\n"+strings.Join(blocks, "\n"))
	cmd.Env = append(os.Environ(), "STEWARD_URL="+p.url, "STEWARD_DATA="+data)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the README's commands failed: %v\n%s", err, out)
	}
	t.Logf("the README's commands printed:\n%s", out)
	for _, want := range []string{`{"tool":"lookup","status":"ACTION_STATUS_`, `{"decidedBy":"user:approver","decision":"APPROVAL_DECISION_APPROVE"}`, "ACTION_STATUS_SUCCEEDED", "# "} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the README's commands printed no %q:\n%s", want, out)
		}
	}
}
