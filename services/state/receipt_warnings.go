package state

import (
	"fmt"
	"strconv"
	"strings"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/task"
)

// warnings lists what is still unresolved about t, whose receipt r is
// (000: "what is still unresolved"): first what may be wrong — unknown
// outcomes, failed, skipped or unevaluated checks, fallbacks, findings —
// then what is left open — approvals, questions, actions, plan steps,
// budget alerts, a review. Each names what it is about by id. r holds
// the rest of the receipt, built from the same events; own are its
// acceptance rounds less those a fork carried from its parent.
func warnings(r *stewardv1.Receipt, own []*stewardv1.AcceptanceRound, t *stewardv1.Task) []*stewardv1.ReceiptWarning {
	var w warningList
	open := map[string]bool{} // actions told of already, by a kind of their own
	for _, a := range t.Actions {
		if !a.Carried && a.Status == stewardv1.ActionStatus_ACTION_STATUS_UNKNOWN {
			open[a.ActionId] = true
			w.add(stewardv1.ReceiptWarningKind_RECEIPT_WARNING_KIND_UNKNOWN_OUTCOME, a.ActionId,
				withReason(fmt.Sprintf("the call to %s went out and no answer came back; nothing has settled it", a.Tool), a.Outcome.GetReason()))
		}
	}
	acceptanceWarnings(&w, own, t)
	planWarnings(&w, r.Plan, t.Plan)
	for _, c := range r.Calls {
		if c.ExecutedBy != "" {
			w.add(stewardv1.ReceiptWarningKind_RECEIPT_WARNING_KIND_FALLBACK, c.ActionId, fmt.Sprintf("a person, %s, did the work of %s instead of the tool", c.ExecutedBy, c.Tool))
		}
	}
	swapped := fallbackWarnings(&w, r) // receipt_fallback.go
	for _, ch := range r.VersionChanges {
		if ch.Field == "model" && swapped[ch.DecisionId] {
			continue // told above, as an undeclared swap
		}
		w.add(stewardv1.ReceiptWarningKind_RECEIPT_WARNING_KIND_FALLBACK, ch.DecisionId, fmt.Sprintf("the %s changed from %s to %s between decisions", strings.ReplaceAll(ch.Field, "_", " "), ch.From, ch.To))
	}
	for _, f := range r.Findings {
		w.add(stewardv1.ReceiptWarningKind_RECEIPT_WARNING_KIND_FINDING, f.FindingId, withReason("auditor "+f.RecordedBy+" found a "+enumWords(f.Kind.String(), "FINDING_KIND_"), f.Description))
	}
	for _, d := range r.Decisions {
		for _, f := range d.Flags {
			w.add(stewardv1.ReceiptWarningKind_RECEIPT_WARNING_KIND_FINDING, d.DecisionId, fmt.Sprintf("decision flagged %s: context item %s: %s", enumWords(f.Kind.String(), "DECISION_FLAG_KIND_"), f.ContextId, f.Detail))
		}
	}
	status := callStatus(r)
	for _, a := range r.Approvals {
		if approvalDecision(a, status[a.ActionId]) != "open" {
			continue
		}
		of := "action " + a.ActionId
		if a.ActionId == "" {
			of = fmt.Sprintf("plan version %d", a.PlanVersion)
		}
		open[a.ActionId] = true
		w.add(stewardv1.ReceiptWarningKind_RECEIPT_WARNING_KIND_APPROVAL_WAITING, a.ApprovalId,
			fmt.Sprintf("the approval of %s waits for %s since %s", of, orNone(strings.Join(a.RequiredRoles, " or ")), orNone(when(a.RequestedAt))))
	}
	if q := t.OpenInput; q != nil {
		w.add(stewardv1.ReceiptWarningKind_RECEIPT_WARNING_KIND_QUESTION_UNANSWERED, q.QuestionId, fmt.Sprintf("asked by %s at %s: %s", q.AskedBy, when(q.AskedAt), q.Question))
	}
	for _, id := range t.Progress.GetRemaining() {
		if a := task.FindAction(t, id); a != nil && !open[id] {
			w.add(stewardv1.ReceiptWarningKind_RECEIPT_WARNING_KIND_ACTION_NOT_ENDED, id, fmt.Sprintf("%s is %s", a.Tool, task.ActionStatusName(a.Status)))
		}
	}
	budgetWarnings(&w, t)
	return w.list
}

// warningList gathers warnings in the order they are added.
type warningList struct{ list []*stewardv1.ReceiptWarning }

func (w *warningList) add(kind stewardv1.ReceiptWarningKind, about, text string) {
	w.list = append(w.list, &stewardv1.ReceiptWarning{Kind: kind, About: about, Text: text})
}

// acceptanceWarnings tells what the acceptance checks leave unresolved:
// no criteria, criteria never evaluated, criteria that failed in the
// latest round, a result accepted with no person's review, or one waiting
// for it. rounds are the task's own.
func acceptanceWarnings(w *warningList, rounds []*stewardv1.AcceptanceRound, t *stewardv1.Task) {
	criteria := t.Contract.GetAcceptanceCriteria()
	switch {
	case len(criteria) == 0:
		w.add(stewardv1.ReceiptWarningKind_RECEIPT_WARNING_KIND_CHECK_NOT_EVALUATED, "contract.acceptance_criteria", "the contract has no acceptance criteria: nothing checks the result")
	case len(rounds) == 0:
		w.add(stewardv1.ReceiptWarningKind_RECEIPT_WARNING_KIND_CHECK_NOT_EVALUATED, "contract.acceptance_criteria",
			fmt.Sprintf("the task was never marked produced: none of its %d acceptance criteria was evaluated", len(criteria)))
	}
	if len(rounds) == 0 {
		return
	}
	last := rounds[len(rounds)-1]
	for _, c := range last.Checks {
		if !c.Passed {
			w.add(stewardv1.ReceiptWarningKind_RECEIPT_WARNING_KIND_CHECK_FAILED, c.CriterionId, withReason(fmt.Sprintf("failed in round %d", last.Round), c.Detail))
		}
	}
	about := "round " + strconv.FormatUint(uint64(last.Round), 10)
	switch {
	case last.Decision == stewardv1.AcceptanceDecision_ACCEPTANCE_DECISION_ACCEPTED && last.DecidedBy == task.CriteriaAcceptor:
		w.add(stewardv1.ReceiptWarningKind_RECEIPT_WARNING_KIND_REVIEW_NOT_ASKED, about, "accepted on its acceptance criteria alone: no person reviewed the result")
	case last.Decision == stewardv1.AcceptanceDecision_ACCEPTANCE_DECISION_PENDING:
		w.add(stewardv1.ReceiptWarningKind_RECEIPT_WARNING_KIND_REVIEW_WAITING, about, "the result waits for its acceptance owner, "+orNone(t.Contract.GetAcceptanceOwnerRef()))
	}
}

// planWarnings tells the plan steps that were skipped, that failed while
// the plan went on without them, and that are not done.
func planWarnings(w *warningList, rp *stewardv1.ReceiptPlan, ps *stewardv1.PlanState) {
	if rp == nil {
		return
	}
	onFailure := map[string]stewardv1.OnFailure{}
	for _, st := range ps.GetPlan().GetSteps() {
		onFailure[st.Id] = st.OnFailure
	}
	for _, st := range append(append([]*stewardv1.PlanStepState(nil), rp.Steps...), rp.Retired...) {
		switch st.Status {
		case stewardv1.StepStatus_STEP_STATUS_SKIPPED:
			w.add(stewardv1.ReceiptWarningKind_RECEIPT_WARNING_KIND_STEP_SKIPPED, st.StepId, withReason("the step did nothing", st.Reason))
		case stewardv1.StepStatus_STEP_STATUS_FAILED:
			if onFailure[st.StepId] == stewardv1.OnFailure_ON_FAILURE_CONTINUE {
				w.add(stewardv1.ReceiptWarningKind_RECEIPT_WARNING_KIND_FALLBACK, st.StepId, withReason("the step failed and the plan went on without it (on_failure continue)", st.Reason))
			}
		}
	}
	for _, st := range rp.Steps {
		if st.Status == stewardv1.StepStatus_STEP_STATUS_PENDING || st.Status == stewardv1.StepStatus_STEP_STATUS_RUNNING {
			w.add(stewardv1.ReceiptWarningKind_RECEIPT_WARNING_KIND_PLAN_NOT_FINISHED, st.StepId, "the step is "+task.StepStatusName(st.Status))
		}
	}
}

// budgetWarnings tells every budget alert raised at 80 % or more.
func budgetWarnings(w *warningList, t *stewardv1.Task) {
	for _, key := range t.BudgetUsed.GetAlerts() {
		parts := strings.SplitN(key, ":", 3)
		if len(parts) < 2 {
			continue
		}
		pct, err := strconv.Atoi(parts[1])
		if err != nil || pct < 80 {
			continue
		}
		what := parts[0]
		if len(parts) == 3 {
			what += " of milestone " + parts[2]
		}
		w.add(stewardv1.ReceiptWarningKind_RECEIPT_WARNING_KIND_BUDGET_ALERT, key, fmt.Sprintf("spending reached %d%% of the %s limit", pct, what))
	}
}

// warningsMarkdown renders the warnings, near the top of the receipt.
func warningsMarkdown(w md, ws []*stewardv1.ReceiptWarning) {
	w.section("Warnings")
	if len(ws) == 0 {
		w.line("Nothing is left unresolved.")
		return
	}
	var rows [][]string
	for _, x := range ws {
		rows = append(rows, []string{enumWords(x.Kind.String(), "RECEIPT_WARNING_KIND_"), orDash(code(x.About, true)), text(x.Text)})
	}
	w.table("Kind | About | What", rows)
}
