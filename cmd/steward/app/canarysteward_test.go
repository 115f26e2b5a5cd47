package app

import (
	"bytes"
	"os"
	"path/filepath"
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

// TestCanaryRunToolCandidateRefusesTheParams: a new version of a tool
// whose parameters schema refuses what the normal sample sends is what a
// canary is for: the sample fails (exit 1), named with the refusal, not
// the run (3) as if the definition were wrong.
func TestCanaryRunToolCandidateRefusesTheParams(t *testing.T) {
	dir := t.TempDir()
	refund2 := writeFileT(t, dir, "refund2.json", `{"name": "refund", "version": "2.0.0", "effectClass": "EFFECT_CLASS_IDEMPOTENT_WRITE",
	  "dataSensitivity": "DATA_SENSITIVITY_INTERNAL", "idempotency": {"honoursKey": true, "keyScope": "action", "onRepeat": "return_first"},
	  "parametersSchema": "{\"type\":\"object\",\"required\":[\"reason\"]}"}`)
	rep := runCanaryCLI(t, canary.ExitFail, "--def", canaryExample, "--baseline", filepath.Join(dir, "none.json"), "--against", "tool="+refund2)
	if s := rep.Verdicts[0].Sentence(); !strings.Contains(s, "sample refund-normal: ") || !strings.Contains(s, "reason") ||
		!strings.Contains(s, "(expected accepted)") || !rep.Verdicts[1].Pass {
		t.Errorf("candidate refusing the params: %s", s)
	}
}

// TestCanaryRunToolCandidateRefusesAPlan: the same for a plan sample: a
// candidate tool whose schema refuses a plan step's parameters fails the
// sample that plans it (exit 1), and the other plan passes.
func TestCanaryRunToolCandidateRefusesAPlan(t *testing.T) {
	dir := t.TempDir()
	def := writeFileT(t, dir, "plans.json", canaryPlanDef)
	payout2 := writeFileT(t, dir, "payout2.json", `{"name": "payout", "version": "2.0.0", "effectClass": "EFFECT_CLASS_IRREVERSIBLE",
	  "dataSensitivity": "DATA_SENSITIVITY_INTERNAL", "parametersSchema": "{\"type\":\"object\",\"required\":[\"reason\"]}"}`)
	rep := runCanaryCLI(t, canary.ExitFail, "--def", def, "--sample-timeout", "1m", "--against", "tool="+payout2)
	if s := rep.Verdicts[1].Sentence(); !strings.Contains(s, "sample payout-plan: ") || !strings.Contains(s, "reason") ||
		!rep.Verdicts[0].Pass {
		t.Errorf("candidate refusing a plan's params: %s", s)
	}
}
