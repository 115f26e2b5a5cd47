package state

import (
	"fmt"
	"strings"

	"google.golang.org/protobuf/proto"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// receiptFallbacks puts on r every engagement of a declared fallback on t,
// the model changes no fallback declares, and whether the result was
// produced under a fallback (docs/fallbacks.md).
func receiptFallbacks(r *stewardv1.Receipt, t *stewardv1.Task) {
	for _, e := range t.FallbackEngagements {
		r.FallbackEngagements = append(r.FallbackEngagements, proto.CloneOf(e))
	}
	for _, s := range t.UndeclaredModelSwaps {
		r.UndeclaredModelSwaps = append(r.UndeclaredModelSwaps, proto.CloneOf(s))
	}
	r.ProducedUnderFallback = t.ProducedUnderFallback
}

// fallbackWarnings warns of each engagement, and of each undeclared model
// swap, whose version change it stands for: skipped names those changes.
func fallbackWarnings(w *warningList, r *stewardv1.Receipt) (skipped map[string]bool) {
	for _, e := range r.FallbackEngagements {
		w.add(stewardv1.ReceiptWarningKind_RECEIPT_WARNING_KIND_FALLBACK, e.FallbackId,
			fmt.Sprintf("declared fallback %s: %s stood in for %s (%s)", e.FallbackId, e.Fallback, e.Primary, evidenceText(e.EngagedBy)))
	}
	skipped = map[string]bool{}
	for _, s := range r.UndeclaredModelSwaps {
		skipped[s.ToDecisionId] = true
		w.add(stewardv1.ReceiptWarningKind_RECEIPT_WARNING_KIND_FALLBACK, s.ToDecisionId,
			fmt.Sprintf("undeclared model swap: decision %s used %s, decision %s before it %s, and no declared fallback covers the change", s.ToDecisionId, s.ToModel, s.FromDecisionId, s.FromModel))
	}
	return skipped
}

// evidenceText tells why a fallback engaged or cleared.
func evidenceText(e *stewardv1.FallbackEvidence) string {
	switch e.GetTrigger() {
	case "failure_class":
		return fmt.Sprintf("action %s failed %s", e.ActionId, enumWords(e.FailureClass.String(), "FAILURE_CLASS_"))
	case "latency":
		return fmt.Sprintf("action %s took %s", e.ActionId, e.Latency.AsDuration())
	case "breaker":
		return fmt.Sprintf("the breaker of service %s opened", e.ServiceKey)
	case "breaker_closed":
		return fmt.Sprintf("the breaker of service %s closed", e.ServiceKey)
	case "retry_after":
		return "its time on the fallback ran out: the primary is tried again"
	case "reported":
		return fmt.Sprintf("the agent reported decision %s", e.DecisionId)
	}
	return orNone(e.GetTrigger())
}

// fallbacksMarkdown renders the engagements of declared fallbacks and the
// undeclared model swaps; nothing when there were neither.
func fallbacksMarkdown(w md, r *stewardv1.Receipt) {
	if len(r.FallbackEngagements) == 0 && len(r.UndeclaredModelSwaps) == 0 {
		return
	}
	w.section("Fallbacks")
	if r.ProducedUnderFallback {
		w.line("The result was produced under a fallback.")
		w.line("")
	}
	var rows [][]string
	for _, e := range r.FallbackEngagements {
		cleared := "still engaged"
		if e.ClearedAt != nil {
			cleared = when(e.ClearedAt) + ": " + evidenceText(e.ClearedBy)
		}
		rows = append(rows, []string{code(e.FallbackId, true), enumWords(e.Kind.String(), "FALLBACK_KIND_"), text(e.Primary + " → " + e.Fallback),
			text(evidenceText(e.EngagedBy)), when(e.EngagedAt), text(cleared), orDash(strings.Join(append(append([]string{}, e.ActionIds...), e.DecisionIds...), ", "))})
	}
	if len(rows) > 0 {
		w.table("Fallback | Kind | Primary → fallback | Engaged because | Engaged at | Cleared | Actions and decisions under it", rows)
	}
	if len(r.UndeclaredModelSwaps) == 0 {
		return
	}
	w.line("")
	w.line("Undeclared model swaps (no declared fallback covers them):")
	w.line("")
	rows = nil
	for _, s := range r.UndeclaredModelSwaps {
		rows = append(rows, []string{text(s.FromModel), text(s.ToModel), code(s.FromDecisionId, true), code(s.ToDecisionId, true)})
	}
	w.table("From | To | Decision before | Decision after", rows)
}

// fallbackSummary tells a fallback engaging or clearing on the timeline,
// or "" for another event.
func fallbackSummary(ev *stewardv1.Event) string {
	switch p := ev.Payload.(type) {
	case *stewardv1.Event_FallbackEngaged:
		return fmt.Sprintf("Fallback %s engaged: %s", p.FallbackEngaged.FallbackId, evidenceText(p.FallbackEngaged.Evidence))
	case *stewardv1.Event_FallbackCleared:
		return fmt.Sprintf("Fallback %s cleared, back on the primary: %s", p.FallbackCleared.FallbackId, evidenceText(p.FallbackCleared.Evidence))
	}
	return ""
}
