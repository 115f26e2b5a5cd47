package e2e_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// runExample runs examples/<script> against the real binary started the
// README's way: with the example tools and nothing else, so with the
// tokens it creates on first start, which the script reads from the data
// directory. It returns the script's output; a script that fails fails
// the test.
func runExample(t *testing.T, script string) string {
	t.Helper()
	requireTools(t, "bash", "curl", "jq")
	data := t.TempDir()
	p := startCommand(t, nil, "dev", "--addr", "127.0.0.1:0", "--data", data, "--log-level", "warn", "--tools", "../examples/tools.json")
	return runExampleAt(t, script, p.url, data)
}

// runExampleAt runs examples/<script> against Steward at url, with the
// token file in data, and returns its output; a script that fails fails
// the test.
func runExampleAt(t *testing.T, script, url, data string) string {
	t.Helper()
	cmd := exec.Command("bash", "../examples/"+script)
	cmd.Env = append(os.Environ(), "STEWARD_URL="+url, "STEWARD_DATA="+data, "RUN=test")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s failed: %v\n%s", script, err, out)
	}
	return string(out)
}

// requireTools skips the test when a program it runs is not installed,
// and fails it instead under CI (CI=true), where a skip would hide that
// the test never ran.
func requireTools(t *testing.T, programs ...string) {
	t.Helper()
	for _, program := range programs {
		if _, err := exec.LookPath(program); err != nil {
			if os.Getenv("CI") == "true" {
				t.Fatalf("%s is not installed, and CI=true: the test must run in CI", program)
			}
			t.Skipf("%s is not installed", program)
		}
	}
}

// pinnedTool is the path of name, one of the tools ./scripts/tools pins
// into .bin, found there or on the PATH; a missing one skips the test, or
// fails it under CI=true.
func pinnedTool(t *testing.T, name string) string {
	t.Helper()
	if path, err := filepath.Abs(filepath.Join("..", ".bin", name)); err == nil {
		if _, err := exec.LookPath(path); err == nil {
			return path
		}
	}
	requireTools(t, name)
	path, _ := exec.LookPath(name)
	return path
}

// TestExampleWalkthrough runs examples/walkthrough.sh, the README's
// example: a read, an irreversible write approved by a person, the ledger.
func TestExampleWalkthrough(t *testing.T) {
	checkWalkthrough(t, runExample(t, "walkthrough.sh"))
}

// checkWalkthrough checks walkthrough.sh's output: the read succeeded with
// its result, the write waited for approval and ran once approved by
// user:approver, and the script reached its end.
func checkWalkthrough(t *testing.T, out string) {
	t.Helper()
	for _, want := range []string{"succeeded", `{"result":{"ok":true},"resultHash":"`, `"decidedBy":"user:approver"`, `"approvedBy": "user:approver"`, "POLICY_DECISION_REQUIRE_APPROVAL", "done: task"} {
		if !strings.Contains(out, want) {
			t.Errorf("walkthrough output lacks %q:\n%s", want, out)
		}
	}
}

// TestExamplePlan runs examples/plan.sh, docs/plans.md's walkthrough: each
// step ends as the plan says — the branches with the parameters they
// computed from the first step's result, the step whose when is false
// skipped, the last reading how the others ended — and the timeline tells
// it, both branches running at once, up to the task produced.
func TestExamplePlan(t *testing.T) {
	checkPlan(t, runExample(t, "plan.sh"))
}

// checkPlan checks plan.sh's output, as TestExamplePlan says.
func checkPlan(t *testing.T, out string) {
	t.Helper()
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`(?m)^find\tSTEP_STATUS_SUCCEEDED\t\{"customer":"acme"\}$`),
		regexp.MustCompile(`(?m)^billing\tSTEP_STATUS_SUCCEEDED\t\{"customer":"acme-billing"\}$`),
		regexp.MustCompile(`(?m)^support\tSTEP_STATUS_SUCCEEDED\t\{"customer":"acme-support"\}$`),
		regexp.MustCompile(`(?m)^escalate\tSTEP_STATUS_SKIPPED\tits when was false: !steps.find.result.ok$`),
		regexp.MustCompile(`(?m)^summary\tSTEP_STATUS_SUCCEEDED\t\{"customer":"acme: billing succeeded, escalate skipped"\}$`),
		regexp.MustCompile(`said allow for plan version 1`),
		regexp.MustCompile(`marked the task produced`),
		regexp.MustCompile(`done: task \w+ TASK_STATUS_ACCEPTED`),
	} {
		if !want.MatchString(out) {
			t.Errorf("plan.sh output does not match %s:\n%s", want, out)
		}
	}
	// Independent steps start in the same pass: both branches before either ends.
	if a, b := strings.Index(out, "Plan step support started"), strings.Index(out, "Plan step billing succeeded"); a < 0 || b < a {
		t.Errorf("the timeline does not show both branches started before either ended:\n%s", out)
	}
}
