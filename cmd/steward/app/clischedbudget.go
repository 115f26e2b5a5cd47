package app

import (
	"fmt"
	"strings"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// runsBudget is what a schedule's runs have committed against its runs
// budget: "800 of 1000 tokens, 0 of 5000000 cost micros"; empty without one.
func runsBudget(sc *stewardv1.Schedule) string {
	rb := sc.GetTemplate().GetRunsBudget()
	var out []string
	if rb.GetMaxTokens() > 0 {
		out = append(out, fmt.Sprintf("%d of %d tokens", sc.CommittedTokens, rb.MaxTokens))
	}
	if rb.GetMaxCostMicros() > 0 {
		out = append(out, fmt.Sprintf("%d of %d cost micros", sc.CommittedCostMicros, rb.MaxCostMicros))
	}
	return strings.Join(out, ", ")
}
