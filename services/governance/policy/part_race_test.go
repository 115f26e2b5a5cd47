package policy

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// TestAPartSharedByEvaluationsUnderWith: a part fresh from NewPart, shared
// by evaluations running at once whose rules override the input (`with`,
// which copies it), is seen whole by every one of them. A part whose keys
// were left to be sorted on first use was copied half sorted here: keys
// missing or twice (and a data race under -race).
func TestAPartSharedByEvaluationsUnderWith(t *testing.T) {
	dir := t.TempDir()
	const rules = `package steward.policy
import rego.v1
decision := {"decision": "allow", "reasons": [sprintf("%d %d", [n, m])]} if {
	n := count({k | some k, _ in input.tool}) with input.action.params as {}
	m := count({k | some k, _ in input.tool})
}
`
	if err := os.WriteFile(filepath.Join(dir, "with.rego"), []byte(rules), 0o600); err != nil {
		t.Fatal(err)
	}
	e, err := Load(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	const keys = 64
	want := fmt.Sprintf("%d %d", keys, keys)
	for round := range 200 {
		doc := map[string]any{}
		for k := range keys {
			doc[fmt.Sprintf("k%03d-%d", (k*37)%keys, round)] = "v"
		}
		tool, err := NewPart(doc)
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		for range 4 {
			wg.Go(func() {
				res, err := e.Evaluate(context.Background(), map[string]any{"tool": tool, "action": map[string]any{"params": map[string]any{"x": "y"}}})
				if err != nil {
					t.Error(err)
					return
				}
				if len(res.Reasons) != 1 || res.Reasons[0] != want {
					t.Errorf("round %d: policy saw %v, want %q", round, res.Reasons, want)
				}
			})
		}
		wg.Wait()
		if t.Failed() {
			return
		}
	}
}
