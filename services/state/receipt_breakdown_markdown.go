package state

import (
	"fmt"
	"strconv"
	"time"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// breakdownMarkdown renders where the time, tokens, cost and trouble went:
// per milestone, then per step, each table adding up to the budget used.
func breakdownMarkdown(w md, b *stewardv1.ReceiptBreakdown) {
	w.section("Per milestone and per step")
	if b == nil {
		w.line("Not recorded.")
		return
	}
	w.line("Time is from a row's first event to its last. Each table's tokens and cost add up to the budget used.")
	w.line("")
	var rows [][]string
	for _, r := range b.Milestones {
		rows = append(rows, append([]string{rowName(r)}, rowFigures(r)...))
	}
	w.table("Milestone | Time | >Tokens | >Cost (micros) | >Share of cost | >Retries | >Failures | >Interventions", rows)
	w.line("")
	w.line("- **Stage that failed most:** %s", failedMost(b.MostFailedMilestone))
	w.line("- **Step that failed most:** %s", failedMost(b.MostFailedStep))
	w.line("")
	if len(b.Steps) == 0 {
		w.line("No step spent anything or ran.")
		return
	}
	rows = nil
	for _, r := range b.Steps {
		rows = append(rows, append([]string{rowName(r), orDash(code(r.MilestoneId, true))}, rowFigures(r)...))
	}
	w.table("Step | Milestone | Time | >Tokens | >Cost (micros) | >Share of cost | >Retries | >Failures | >Interventions", rows)
}

// rowName says what a row stands for.
func rowName(r *stewardv1.ReceiptCostRow) string {
	id := code(r.Id, true)
	switch r.Kind {
	case stewardv1.ReceiptCostRowKind_RECEIPT_COST_ROW_KIND_MILESTONE:
		return id
	case stewardv1.ReceiptCostRowKind_RECEIPT_COST_ROW_KIND_NO_MILESTONE:
		return "no milestone"
	case stewardv1.ReceiptCostRowKind_RECEIPT_COST_ROW_KIND_PLAN_STEP:
		return "plan step " + id
	case stewardv1.ReceiptCostRowKind_RECEIPT_COST_ROW_KIND_ACTION:
		return "action " + id
	case stewardv1.ReceiptCostRowKind_RECEIPT_COST_ROW_KIND_DECISION:
		return "decision " + id
	case stewardv1.ReceiptCostRowKind_RECEIPT_COST_ROW_KIND_REPORTED_USAGE:
		return "usage reported outside actions"
	case stewardv1.ReceiptCostRowKind_RECEIPT_COST_ROW_KIND_RESERVED:
		return "reserved for sub-tasks and forks, net"
	}
	return "**not attributed**"
}

func rowFigures(r *stewardv1.ReceiptCostRow) []string {
	elapsed := ""
	if r.Elapsed != nil {
		elapsed = r.Elapsed.AsDuration().Round(time.Millisecond).String()
	}
	return []string{orDash(elapsed), strconv.FormatInt(r.Tokens, 10), strconv.FormatInt(r.CostMicros, 10),
		strconv.FormatFloat(r.CostShare, 'f', 1, 64) + " %", fmt.Sprint(r.Retries), fmt.Sprint(r.Failures), fmt.Sprint(r.Interventions)}
}

func failedMost(r *stewardv1.ReceiptCostRow) string {
	if r == nil {
		return "nothing failed"
	}
	if r.Failures == 1 {
		return rowName(r) + ", 1 failure"
	}
	return fmt.Sprintf("%s, %d failures", rowName(r), r.Failures)
}
