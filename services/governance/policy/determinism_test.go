package policy_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/steward-run/steward/services/governance/policy"
)

// TestNondeterministicBuiltinsAreRefused: a bundle that calls a built-in
// whose answer is not recorded (the network, the clock, chance) does not
// load, and the error names the file, the line and the built-in; as an
// expression, as a term inside one, and on reload, where the bundle in
// force stays.
func TestNondeterministicBuiltinsAreRefused(t *testing.T) {
	ctx := context.Background()
	for name, body := range map[string]string{
		"http.send":    "r := http.send({\"method\": \"GET\", \"url\": \"http://x\"})\n\tr.status_code == 200",
		"time.now_ns":  "time.now_ns() > 0",
		"rand.intn":    "x := 1 + rand.intn(\"k\", 10)\n\tx > 0",
		"uuid.rfc4122": "count(uuid.rfc4122(\"k\")) > 0",
		"opa.runtime":  "opa.runtime().env != {}",
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			src, err := os.ReadFile(filepath.Join("default", "steward.rego"))
			if err != nil {
				t.Fatal(err)
			}
			writeRego(t, dir, "steward.rego", string(src))
			writeRego(t, dir, "extra.rego", "package steward.extra\n\nflag if {\n\t"+body+"\n}\n")
			_, err = policy.Load(ctx, dir)
			if err == nil || !strings.Contains(err.Error(), "extra.rego:") || !strings.Contains(err.Error(), "built-in "+name+" is refused") {
				t.Fatalf("Load = %v, want a refusal naming extra.rego and %s", err, name)
			}
		})
	}
	// The default bundle and the examples still load.
	for _, dir := range []string{"", filepath.Join("examples", "model_decisions"), filepath.Join("examples", "pinned_inputs")} {
		if _, err := policy.Load(ctx, dir); err != nil {
			t.Errorf("bundle %q: %v", dir, err)
		}
	}
}

func writeRego(t *testing.T, dir, name, content string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
