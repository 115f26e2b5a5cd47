package e2e_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// shellBlock is one ```sh block of a doc page; a block fenced ```sh norun
// (starting the server, running the test suite) is not run, since the
// test starts the server itself.
var shellBlock = regexp.MustCompile("(?ms)^```(sh|bash)( norun)?\n(.*?)^```$")

// docBlocks returns the shell blocks of page that are meant to run.
func docBlocks(t *testing.T, page string) []string {
	t.Helper()
	text, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	var blocks []string
	for _, m := range shellBlock.FindAllStringSubmatch(string(text), -1) {
		if m[2] == "" {
			blocks = append(blocks, m[3])
		}
	}
	return blocks
}

// runDocBlocks runs page's shell blocks in order, in one bash session so
// that the variables a block sets carry to the next, against the real
// binary started as the README says (the example tools, the tokens it
// writes on first start under .steward/data). `go run ./cmd/steward` in a
// block runs the test's binary against this server, and the docs' address
// (127.0.0.1:7700 or localhost:7700) is this server's. A block that fails
// fails the test with the block and the session's output. The session runs
// with set -u and curl --fail-with-body, so an unset variable or a refused
// call fails its block.
func runDocBlocks(t *testing.T, page string) {
	t.Helper()
	requireTools(t, "bash", "curl", "jq")
	blocks := docBlocks(t, page)
	if len(blocks) == 0 {
		t.Fatalf("%s has no shell blocks to run", page)
	}
	dir := t.TempDir()
	p := startCommand(t, nil, "dev", "--addr", "127.0.0.1:0", "--data", filepath.Join(dir, ".steward", "data"),
		"--log-level", "warn", "--tools", "../examples/tools.json")
	addr := strings.TrimPrefix(p.url, "http://")
	var script strings.Builder
	fmt.Fprintf(&script, "set -euo pipefail\ncurl() { command curl --fail-with-body \"$@\"; }\ngo() { if [ \"$1 $2\" = 'run ./cmd/steward' ]; then shift 2; %q \"$@\" --addr %s; else command go \"$@\"; fi; }\n", binary, addr)
	for i, block := range blocks {
		fmt.Fprintf(&script, "echo '### block %d' >&2\n%s\n", i, strings.NewReplacer("127.0.0.1:7700", addr, "localhost:7700", addr).Replace(block))
	}
	cmd := exec.Command("bash", "-c", script.String())
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		failed := 0
		for i := range blocks {
			if strings.Contains(string(out), fmt.Sprintf("### block %d\n", i)) {
				failed = i
			}
		}
		t.Fatalf("%s: block %d failed: %v\n--- block:\n%s--- output:\n%s", page, failed, err, blocks[failed], out)
	}
}

// TestReadmeBlocks runs every shell block of the README, in order,
// against the real binary: the front door's tour must work as written.
func TestReadmeBlocks(t *testing.T) {
	runDocBlocks(t, "../README.md")
}

// TestDocsTourBlocks runs every shell block of docs/tour.md, in order,
// against the real binary: a new user running the tour in order succeeds.
func TestDocsTourBlocks(t *testing.T) {
	runDocBlocks(t, "../docs/tour.md")
}
