package policy_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/steward-run/steward/pkg/action"
	"github.com/steward-run/steward/services/governance/policy"
)

// BenchmarkEvaluateAtInputLimits measures one evaluation whose input holds
// params at the limits a proposal is held to (maxParams bytes,
// action.MaxValueDepth levels): under the default bundle, and under one
// that walks the whole input, as a careless policy might. Run:
//
//	go test -run '^$' -bench EvaluateAtInputLimits -benchmem ./services/governance/policy/
func BenchmarkEvaluateAtInputLimits(b *testing.B) {
	walker := b.TempDir()
	if err := os.WriteFile(filepath.Join(walker, "p.rego"), []byte(`package steward.policy

nodes := count([x | walk(input, x)])

decision := {"decision": "allow", "risk_tier": "RISK_TIER_LOW", "reasons": [sprintf("%d nodes", [nodes])]}
`), 0o600); err != nil {
		b.Fatal(err)
	}
	for _, bundle := range []struct{ name, dir string }{{"default", ""}, {"walk", walker}} {
		engine, err := policy.Load(context.Background(), bundle.dir)
		if err != nil {
			b.Fatal(err)
		}
		for _, p := range []struct{ name, json string }{
			{"params=small", `{"q":"x"}`},
			{"params=256KiB_wide", wideParams(maxParams)},
			{"params=64_deep", strings.Repeat(`{"a":`, action.MaxValueDepth-1) + `{}` + strings.Repeat(`}`, action.MaxValueDepth-1)},
		} {
			var params map[string]any
			if err := json.Unmarshal([]byte(p.json), &params); err != nil {
				b.Fatal(err)
			}
			input := actionInput(nil)
			input["action"].(map[string]any)["params"] = params
			b.Run(bundle.name+"/"+p.name, func(b *testing.B) {
				for b.Loop() {
					if _, err := engine.Evaluate(context.Background(), input); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// maxParams is control.MaxParams; a plane's tests do not import another
// plane.
const maxParams = 256 << 10

// wideParams is a params object of about size bytes: short keys, small
// values, as many nodes as the size allows.
func wideParams(size int) string {
	var s strings.Builder
	s.WriteString("{")
	for i := 0; s.Len() < size-16; i++ {
		if i > 0 {
			s.WriteByte(',')
		}
		fmt.Fprintf(&s, `"%x":[1,2]`, i)
	}
	s.WriteString("}")
	return s.String()
}
