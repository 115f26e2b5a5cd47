package e2e_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/steward-run/steward/pkg/canary"
	"github.com/steward-run/steward/pkg/stewardtest"
)

// canaryRunDef is the example definition with its lookup tool pointed at
// url, a staging endpoint, instead of its stub.
func canaryRunDef(t *testing.T, dir, url string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "examples", "canary", "refunds.json"))
	if err != nil {
		t.Fatal(err)
	}
	var def map[string]any
	if err := json.Unmarshal(data, &def); err != nil {
		t.Fatal(err)
	}
	lookup := def["tools"].([]any)[0].(map[string]any)
	delete(lookup, "stub")
	lookup["staging"] = url
	out, _ := json.Marshal(def)
	return writeFile(t, dir, "refunds.json", string(out))
}

// TestCanaryRun is issue 35's fourth point through the real binary:
// `steward canary run` starts a Steward of its own, runs the example's
// three samples (normal, edge with an approval, expected failure) as real
// tasks, the lookup against a real tool server and the others against
// recording stubs, and passes under today's bundle, writing the baseline
// (exit 0); a candidate bundle that denies the refund tool the normal
// sample needs fails it (exit 1), naming the sample, "allow → deny" and
// "not accepted", and writes no baseline; a definition with a bad field
// exits 3 naming the field, and a bundle that does not compile exits 3
// naming its file. Every run leaves no Steward behind: its temporary
// directory is gone.
func TestCanaryRun(t *testing.T) {
	tool := stewardtest.StartTool(t)
	dir := t.TempDir()
	tmp := t.TempDir()
	env := []string{"TMPDIR=" + tmp}
	def := canaryRunDef(t, dir, tool.URL+"/lookup")
	baseline := filepath.Join(dir, "refunds.baseline.json")

	began := time.Now()
	out, _ := runBinary(t, env, canary.ExitPass, "canary", "run", "--def", def, "--update-baseline")
	t.Logf("3 samples, Steward started and stopped: %s", time.Since(began))
	for _, want := range []string{"canary refunds against current: passed", "sample refund-normal: passed", "sample payout-edge: passed",
		"sample charge-declined: passed", "baseline written", "stub calls: refund 1, payout 1, charge 1"} {
		if !strings.Contains(out, want) {
			t.Errorf("current: no %q in\n%s", want, out)
		}
	}
	if tool.CallsTo("/lookup") != 1 {
		t.Errorf("the staging lookup got %d calls", tool.CallsTo("/lookup"))
	}
	written, err := os.ReadFile(baseline)
	if err != nil {
		t.Fatal(err)
	}

	frozen := canaryBundle(t, dir, "frozen", func(s string) string {
		return s + "\ndeny_reasons contains \"refunds are frozen\" if tool_name == \"refund\"\n"
	})
	out, errs := runBinary(t, env, canary.ExitFail, "canary", "run", "--def", def, "--against", "policy="+frozen, "--update-baseline")
	want := "sample refund-normal: action 2 tool refund@1.0.0: decision allow → deny; not accepted: action 2 refund denied: refunds are frozen (expected accepted)"
	if !strings.Contains(out, want) || !strings.Contains(errs, "canary refunds failed: refund-normal") {
		t.Errorf("frozen: want %q in\n%s\n%s", want, out, errs)
	}
	if !strings.Contains(out, "sample payout-edge: passed") || strings.Contains(out, "baseline written") {
		t.Errorf("frozen: only the refund fails, and no baseline is written:\n%s", out)
	}
	if now, _ := os.ReadFile(baseline); string(now) != string(written) {
		t.Error("a failed run changed the baseline")
	}

	bad := writeFile(t, dir, "bad.json", strings.Replace(mustRead(t, def), `"kind":"edge"`, `"kind":"sideways"`, 1))
	if _, errs := runBinary(t, env, canary.ExitError, "canary", "run", "--def", bad); !strings.Contains(errs, "samples[1].kind") {
		t.Errorf("bad field: %s", errs)
	}
	broken := writeFile(t, filepath.Join(dir, "broken"), "broken.rego", "package steward\nbad bad\n")
	if _, errs := runBinary(t, env, canary.ExitError, "canary", "run", "--def", def, "--against", "policy="+filepath.Dir(broken)); !strings.Contains(errs, "broken.rego:2") {
		t.Errorf("broken bundle: %s", errs)
	}
	if left, _ := os.ReadDir(tmp); len(left) != 0 {
		t.Errorf("left behind in TMPDIR: %v", left)
	}
}

func mustRead(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}
