package state

import (
	"fmt"
	"strings"

	"google.golang.org/protobuf/proto"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// reportSections puts on r, once the rest of it is built from t and its
// history recs, what reports on it: the agent's own account, the
// warnings, and the breakdown per milestone and per step.
func reportSections(r *stewardv1.Receipt, t *stewardv1.Task, recs []*stewardv1.EventRecord) {
	own := r.AcceptanceRounds[min(carriedRounds(recs), len(r.AcceptanceRounds)):]
	agentReport(r, own)
	receiptFallbacks(r, t) // receipt_fallback.go; before the warnings
	r.Warnings = warnings(r, own, t)
	r.Breakdown = breakdown(t, recs)
}

// carriedRounds is how many acceptance rounds a fork carried from its
// parent (task.ForkState): the parent's rounds, its agent's reports and
// checks, not the fork's own.
func carriedRounds(recs []*stewardv1.EventRecord) int {
	if len(recs) == 0 {
		return 0
	}
	return len(recs[0].GetEvent().GetTaskCreated().GetFork().GetState().GetAcceptance())
}

// agentReport puts on r the agent's execution report of the latest of
// its own rounds that carried one: the account a reader wants next to
// the record, kept apart from it and labelled as the agent's.
func agentReport(r *stewardv1.Receipt, own []*stewardv1.AcceptanceRound) {
	for i := len(own) - 1; i >= 0; i-- {
		if rep := own[i].Report; rep != nil {
			r.AgentReport, r.AgentReportRound = proto.CloneOf(rep), own[i].Round
			return
		}
	}
}

// agentReportMarkdown renders the agent's account. Every line of it is
// the agent's word: the heading says so, and nothing in it is restated
// anywhere else as what happened. Its references were checked to name
// things the task has; what it says of them was not.
func agentReportMarkdown(w md, r *stewardv1.Receipt) {
	rep := r.AgentReport
	if rep == nil {
		return
	}
	w.section("The agent's account (its own words, not verified)")
	w.line("What the agent reported with round %d. Steward checked that the actions, artifacts, decisions and plan steps it names exist on the task; it did not check what it says about them. The sections above are the record.", r.AgentReportRound)
	w.line("")
	w.line("- **The agent's summary:** %s", orNone(text(rep.Summary)))
	if len(rep.Steps) > 0 {
		w.line("")
		var rows [][]string
		for i, st := range rep.Steps {
			rows = append(rows, []string{fmt.Sprint(i + 1), orDash(code(st.PlanStepId, true)), orDash(text(st.Description)), orDash(evidence(st))})
		}
		w.table(">Step | Plan step | The agent says it did | Evidence it names", rows)
	}
	if len(rep.Deviations) > 0 {
		w.line("")
		var rows [][]string
		for _, d := range rep.Deviations {
			rows = append(rows, []string{orDash(code(d.PlanStepId, true)), orDash(text(d.What)), orDash(text(d.Why))})
		}
		w.table("Plan step | What differed, says the agent | Why, says the agent", rows)
	}
	if len(rep.LeftOpen) > 0 {
		w.line("")
		w.line("The agent says it left open:")
		w.line("")
		for _, s := range rep.LeftOpen {
			w.line("- %s", itemText(s))
		}
	}
}

// evidence names a reported step's references, by kind.
func evidence(st *stewardv1.ReportStep) string {
	var parts []string
	for _, refs := range []struct {
		kind string
		ids  []string
	}{{"actions", st.ActionIds}, {"artifacts", st.Artifacts}, {"decisions", st.DecisionIds}} {
		if len(refs.ids) > 0 {
			parts = append(parts, refs.kind+" "+code(strings.Join(refs.ids, ", "), true))
		}
	}
	return strings.Join(parts, "; ")
}

// itemText is text(s) for a list item: a start that would make Markdown
// of its own there — a heading, a nested list, a rule — is escaped, so
// that the agent's words stay words.
func itemText(s string) string {
	s = text(s)
	digits := len(s) - len(strings.TrimLeft(s, "0123456789"))
	switch {
	case s != "" && strings.ContainsRune("#-+=", rune(s[0])):
		return `\` + s
	case digits > 0 && digits < len(s) && (s[digits] == '.' || s[digits] == ')'):
		return s[:digits] + `\` + s[digits:]
	}
	return s
}
