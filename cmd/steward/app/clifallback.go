package app

import (
	"fmt"
	"strings"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// fallbackLine says, for `tasks show`, which declared fallbacks are
// engaged and whether the result was produced under one
// (docs/fallbacks.md); "" when neither.
func fallbackLine(t *stewardv1.Task) string {
	var parts []string
	for _, e := range t.FallbackEngagements {
		if e.ClearedAt == nil {
			parts = append(parts, fmt.Sprintf("%s engaged (%s in place of %s)", e.FallbackId, e.Fallback, e.Primary))
		}
	}
	if t.ProducedUnderFallback {
		parts = append(parts, "result produced under a fallback")
	}
	if n := len(t.UndeclaredModelSwaps); n > 0 {
		parts = append(parts, fmt.Sprintf("%d undeclared model swaps", n))
	}
	return strings.Join(parts, "; ")
}

// toolCell is an action's tool, with the primary it stands in for.
func toolCell(a *stewardv1.Action) string {
	if a.FallbackOf != "" {
		return a.Tool + " (for " + a.FallbackOf + ")"
	}
	return a.Tool
}
