package app

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"github.com/steward-run/steward/pkg/canary"
)

// TestCanaryRunStewardRefusesATool: a tool contract Steward refuses at
// start (a parameters schema that is no schema) is exit 3, its Steward
// said not to have started, and nothing is left in TMPDIR.
func TestCanaryRunStewardRefusesATool(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	example, err := os.ReadFile(canaryExample)
	if err != nil {
		t.Fatal(err)
	}
	bad := strings.Replace(string(example), `"parametersSchema": "{\"type\":\"object\"`, `"parametersSchema": "{\"type\":7`, 1)
	if bad == string(example) {
		t.Fatal("the example has no lookup schema to break")
	}
	def := writeFileT(t, t.TempDir(), "bad-schema.json", bad)
	var out, errs bytes.Buffer
	if code := Main([]string{"canary", "run", "--def", def}, &out, &errs); code != canary.ExitError ||
		!strings.Contains(errs.String(), "did not start") {
		t.Errorf("exit %d:\n%s\n%s", code, out.String(), errs.String())
	}
	if left, _ := os.ReadDir(tmp); len(left) != 0 {
		t.Errorf("left behind in TMPDIR: %v", left)
	}
}
