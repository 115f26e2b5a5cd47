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

// shellBlock is one ```sh (or ```bash) block of a doc page, with
// whatever follows the language on the fence line: every block runs, so
// a fence that says anything more (such as the norun this test once
// honoured) fails the test rather than leave a block out.
var shellBlock = regexp.MustCompile("(?ms)^```(?:sh|bash)([^\n]*)\n(.*?)^```$")

// serverFlags are the flags the docs start `steward dev` with; the test
// starts the real binary with them (and its own address and data
// directory), and a block that starts it with any others fails.
const serverFlags = "--tools examples/tools.json"

// docBlocks returns the shell blocks of page, in order.
func docBlocks(t *testing.T, page string) []string {
	t.Helper()
	text, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	var blocks []string
	for _, m := range shellBlock.FindAllStringSubmatch(string(text), -1) {
		if strings.TrimSpace(m[1]) != "" {
			t.Fatalf("%s: a shell block is fenced %q: every block runs, so say what it needs in the block", page, strings.TrimSpace(m[0][:strings.Index(m[0], "\n")]))
		}
		blocks = append(blocks, m[2])
	}
	return blocks
}

// preamble is the shell the blocks run in. Set -u and curl
// --fail-with-body make an unset variable or a refused call fail its
// block. The docs run from the repository root: the session's directory
// links examples/ and .bin/ there. `go run ./cmd/steward dev` is the
// server this test started (with the docs' flags, checked), and any other
// `go run ./cmd/steward` is the test's binary against it (`policy`, which
// calls no server, without --addr); `./scripts/test`
// is the command .ci/run runs (checked by the test), not run again here.
func preamble(addr string) string {
	return fmt.Sprintf(`set -euo pipefail
export STEWARD_URL=http://%[2]s
curl() { command curl --fail-with-body "$@"; }
go() {
  if [ "$1 $2" != 'run ./cmd/steward' ]; then command go "$@"; return; fi
  shift 2
  if [ "$1" = dev ]; then
    shift
    [ "$*" = %[3]q ] || { echo "the docs start steward dev with '$*', the test with '%[3]s'" >&2; return 1; }
    echo "steward dev: serving on %[2]s (started by the test)"; return
  fi
  if [ "$1" = policy ]; then %[1]q "$@"; return; fi   # runs here: no server, no --addr
  %[1]q "$@" --addr %[2]s
}
./scripts/test() { echo "./scripts/test: the command .ci/run runs, so CI runs it"; }
`, binary, addr, serverFlags)
}

// runDocBlocks runs page's shell blocks in order, in one bash session so
// that the variables a block sets carry to the next, against the real
// binary started as the docs say (the example tools, the tokens it writes
// on first start under .steward/data).
func runDocBlocks(t *testing.T, page string) {
	t.Helper()
	dir := docsDir(t)
	p := startCommand(t, nil, append([]string{"dev", "--addr", "127.0.0.1:0", "--data", filepath.Join(dir, ".steward", "data"),
		"--log-level", "warn"}, strings.Fields(strings.ReplaceAll(serverFlags, "examples/", "../examples/"))...)...)
	runDocBlocksAt(t, page, dir, strings.TrimPrefix(p.url, "http://"))
}

// docsDir returns a new directory the docs' blocks run in, as from the
// repository's root: examples/, .bin/ and services/ (its policy
// bundles) link there, and the token file goes in .steward/data.
func docsDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, link := range []string{"examples", ".bin", "services"} {
		target, err := filepath.Abs(filepath.Join("..", link))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, filepath.Join(dir, link)); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// runDocBlocksAt runs page's shell blocks in dir (docsDir), whose
// .steward/data/tokens.json holds the tokens, against Steward at addr
// (HOST:PORT): the docs' address (127.0.0.1:7700 or localhost:7700) is
// addr. A block that fails fails the test with the block and the
// session's output.
func runDocBlocksAt(t *testing.T, page, dir, addr string) {
	t.Helper()
	requireTools(t, "bash", "curl", "jq")
	grpcurl := pinnedTool(t, "grpcurl")
	ci, err := os.ReadFile("../.ci/run")
	if err != nil || !strings.Contains(string(ci), "exec ./scripts/test\n") {
		t.Fatalf(".ci/run does not run ./scripts/test, the test command the README gives (%v)", err)
	}
	blocks := docBlocks(t, page)
	if len(blocks) == 0 {
		t.Fatalf("%s has no shell blocks to run", page)
	}
	var script strings.Builder
	script.WriteString(preamble(addr))
	for i, block := range blocks {
		fmt.Fprintf(&script, "echo '### block %d' >&2\n%s\n", i, strings.NewReplacer("127.0.0.1:7700", addr, "localhost:7700", addr).Replace(block))
	}
	cmd := exec.Command("bash", "-c", script.String())
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "PATH="+filepath.Dir(grpcurl)+string(os.PathListSeparator)+os.Getenv("PATH"))
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
