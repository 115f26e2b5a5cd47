package state

import (
	"fmt"
	"strings"
	"time"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/task"
)

// ReceiptMarkdown renders a receipt for people. It reads nothing but r, so
// anyone holding the JSON receipt can render the same text, and the same
// receipt always renders the same bytes: sections and rows keep the
// receipt's order. Text that came from outside Steward (intents, targets,
// reasons, comments) is escaped so that it cannot format itself as
// something the receipt did not say.
//
// ReceiptMarkdown is a pure function, safe for concurrent use.
func ReceiptMarkdown(r *stewardv1.Receipt) string {
	var b strings.Builder
	w := md{&b}
	summaryMarkdown(w, r)
	warningsMarkdown(w, r.Warnings)
	contextMarkdown(w, r)
	contractVersionsMarkdown(w, r)
	callsMarkdown(w, r.Calls)
	approvalsMarkdown(w, r)
	planMarkdown(w, r.Plan)
	decisionsMarkdown(w, r)
	fallbacksMarkdown(w, r)
	questionsMarkdown(w, r.Questions)
	policyMarkdown(w, r)
	spendMarkdown(w, r)
	breakdownMarkdown(w, r.Breakdown)
	acceptanceMarkdown(w, r.AcceptanceRounds)
	agentReportMarkdown(w, r)
	findingsMarkdown(w, r.Findings)
	credentialMarkdown(w, r.Credential)
	timingsMarkdown(w, r)
	return b.String()
}

// summaryMarkdown renders the receipt's title and where the task stands.
func summaryMarkdown(w md, r *stewardv1.Receipt) {
	w.line("# Receipt: task %s — %s", code(r.TaskId, false), orNone(text(r.Intent)))
	w.line("")
	w.line("Every line below is an event recorded on the task's log, except the section headed \"The agent's account\", which is the agent's own words, shown as such. Nothing here repeats an agent's own report of its work as fact.")
	w.line("")
	w.line("- **Status:** %s", statusLine(r))
	if r.Partial {
		w.line("- **PARTIAL RECEIPT:** the task has not run to an end on its own: it is %s, with %d failed and %d unfinished actions.",
			task.StatusName(r.Status), len(r.Progress.GetFailed()), len(r.Progress.GetRemaining()))
	} else {
		w.line("- **Partial:** no")
	}
	if f := r.ForkedFrom; f != nil {
		w.line("- **Forked from:** task %s at sequence %d (%s): what it did before is on that task's receipt", code(f.ParentTaskId, false), f.AtSequence, text(f.Reason))
	}
	w.line("- **Desired outcome (from the contract):** %s", orNone(text(r.DesiredOutcome)))
	w.line("- **Input version:** %s", orNone(code(r.InputVersion, false)))
	w.line("- **Actions:** %d done, %d failed, %d unfinished", len(r.Progress.GetDone()), len(r.Progress.GetFailed()), len(r.Progress.GetRemaining()))
}

// callsMarkdown renders the receipt's tool calls.
func callsMarkdown(w md, calls []*stewardv1.ReceiptCall) {
	w.section("Tool calls")
	if len(calls) == 0 {
		w.line("No actions were proposed.")
		return
	}
	var rows [][]string
	for _, c := range calls {
		action := code(c.ActionId, true)
		if c.Compensates != "" {
			action += " (undoes " + code(c.Compensates, true) + ")"
		}
		tool := c.Tool
		if c.ToolVersion != "" {
			tool += "@" + c.ToolVersion
		}
		rows = append(rows, []string{action, code(tool, true), orDash(code(c.Target, true)),
			actionStatusName(c.Status), fmt.Sprint(c.Attempts), orDash(callResult(c)), orDash(callPeople(c))})
	}
	w.table("Action | Tool | Target | Status | >Attempts | Result or reason | Approved / settled by", rows)
}

// approvalsMarkdown renders the receipt's approvals, each with how it was
// decided or closed.
func approvalsMarkdown(w md, r *stewardv1.Receipt) {
	w.section("Approvals")
	if len(r.Approvals) == 0 {
		w.line("No approvals were requested.")
		return
	}
	status := callStatus(r)
	var rows [][]string
	for _, a := range r.Approvals {
		of := code(a.ActionId, true)
		if a.ActionId == "" {
			of = fmt.Sprintf("plan version %d", a.PlanVersion)
		}
		rows = append(rows, []string{code(a.ApprovalId, true), of,
			orDash(text(strings.Join(a.RequiredRoles, " or ") + escalation(a))), approvalDecision(a, status[a.ActionId]),
			orDash(text(a.DecidedBy)), orDash(text(a.Comment)), orDash(when(a.RequestedAt)), orDash(when(a.DecidedAt))})
	}
	w.table("Approval | Action | Required roles | Decision | By | Comment | Requested | Decided", rows)
}

// callStatus is the status of each of r's calls, by action id.
func callStatus(r *stewardv1.Receipt) map[string]stewardv1.ActionStatus {
	status := map[string]stewardv1.ActionStatus{}
	for _, c := range r.Calls {
		status[c.ActionId] = c.Status
	}
	return status
}

// escalation says, for the roles' cell, who an approval was escalated to.
func escalation(a *stewardv1.ReceiptApproval) string {
	if a.EscalatedTo == "" {
		return ""
	}
	return fmt.Sprintf("; escalated to %s at %s", a.EscalatedTo, when(a.EscalatedAt))
}

// policyMarkdown renders the policy revisions that judged the task, then
// its retries and errors.
func policyMarkdown(w md, r *stewardv1.Receipt) {
	w.section("Policy revisions")
	if len(r.PolicyRevisions) == 0 {
		w.line("No policy evaluation was recorded.")
	} else {
		w.line("The policy bundle revisions that evaluated the task's actions and plan:")
		w.line("")
		for _, rev := range r.PolicyRevisions {
			w.line("- %s", code(rev, false))
		}
	}

	w.section("Retries and errors")
	w.line("Retries (dispatches beyond each action's first): %d", r.Retries)
	w.line("")
	if len(r.Errors) == 0 {
		w.line("No failures or unknown outcomes were recorded.")
	} else {
		for i, e := range r.Errors {
			w.line("%d. %s", i+1, text(e))
		}
	}
}

// spendMarkdown renders what the task used and what it made.
func spendMarkdown(w md, r *stewardv1.Receipt) {
	w.section("Budget used")
	used := r.GetBudgetUsed()
	w.line("- **Tokens:** %d", used.GetTokens())
	w.line("- **Cost:** %d micro-units%s", used.GetCostMicros(), orEmptyText(" of "+text(used.GetCurrency()), used.GetCurrency()))
	w.section("Artifacts")
	if len(r.Artifacts) == 0 {
		w.line("No artifacts were submitted.")
		return
	}
	var rows [][]string
	for _, a := range r.Artifacts {
		rows = append(rows, []string{code(a.Name, true), fmt.Sprint(a.Version), orDash(code(a.MediaType, true)), fmt.Sprint(a.Size),
			code(a.Hash, true), orDash(code(a.Ref, true)), orDash(code(a.ActionId, true))})
	}
	w.table("Artifact | >Version | Media type | >Size (bytes) | SHA-256 | Where | Produced by", rows)
}

// acceptanceMarkdown renders each acceptance round: who produced, who
// decided, and the checks.
func acceptanceMarkdown(w md, rounds []*stewardv1.AcceptanceRound) {
	w.section("Acceptance")
	if len(rounds) == 0 {
		w.line("The task has not been marked produced.")
	}
	for _, round := range rounds {
		w.line("### Round %d — %s", round.Round, roundDecision(round))
		w.line("")
		w.line("Produced by %s at %s, covering %s.", orNone(text(round.ProducedBy)), orNone(when(round.ProducedAt)), orDash(code(strings.Join(round.Artifacts, ", "), false)))
		if round.DecidedBy != "" {
			w.line("Decided by %s at %s%s.", text(round.DecidedBy), orNone(when(round.DecidedAt)), orEmptyText(": "+text(strings.Join(round.Reasons, "; ")), strings.Join(round.Reasons, "")))
		}
		w.line("")
		if len(round.Checks) == 0 {
			w.line("The contract has no acceptance criteria.")
		} else {
			var rows [][]string
			for _, c := range round.Checks {
				result := "failed"
				if c.Passed {
					result = "passed"
				}
				rows = append(rows, []string{code(c.CriterionId, true), orDash(code(c.Expression, true)), result, orDash(text(c.Detail))})
			}
			w.table("Check | Expression | Result | Detail", rows)
		}
		w.line("")
	}
}

// findingsMarkdown renders the auditors' findings.
func findingsMarkdown(w md, findings []*stewardv1.Finding) {
	w.line("")
	w.section("Audit findings")
	if len(findings) == 0 {
		w.line("No auditor has recorded a finding.")
		return
	}
	var rows [][]string
	for _, f := range findings {
		rows = append(rows, []string{code(f.FindingId, true), enumWords(f.Kind.String(), "FINDING_KIND_"),
			orDash(code(f.ActionId, true)), orDash(text(f.Description)), orDash(text(f.RecordedBy)), orDash(when(f.RecordedAt))})
	}
	w.table("Finding | Kind | Action | Description | Recorded by | Recorded", rows)
}

// credentialMarkdown renders the task's credential, if one was issued.
func credentialMarkdown(w md, c *stewardv1.ReceiptCredential) {
	w.section("Credential")
	if c == nil {
		w.line("No credential was issued.")
		return
	}
	w.line("- **Credential:** %s for %s, signed with key %s, expires %s", code(c.CredentialId, false), orNone(text(c.Principal)), orNone(code(c.KeyId, false)), orNone(when(c.ExpiresAt)))
	if len(c.Chain) > 0 {
		w.line("- **Delegated from:** %s", code(strings.Join(c.Chain, " → "), false))
	}
	if c.Renewals > 0 {
		w.line("- **Renewed:** %d times; the expiry above is the last renewal's", c.Renewals)
	}
	if c.Revoked {
		w.line("- **Revoked:** %s", orNone(text(c.RevokedReason)))
	}
}

// timingsMarkdown renders when the task ran and what the receipt covers.
func timingsMarkdown(w md, r *stewardv1.Receipt) {
	w.section("Timings")
	w.line("- **Created:** %s", orNone(when(r.CreatedAt)))
	w.line("- **Last event:** %s", orNone(when(r.UpdatedAt)))
	if r.Elapsed != nil {
		w.line("- **Elapsed:** %s", r.Elapsed.AsDuration().Round(time.Millisecond))
	}

	w.line("")
	w.line("---")
	w.line("")
	// Plain hex, not a code span: the line is meant to be compared with
	// the head hash that `steward audit verify` prints.
	w.line("Covers events 1..%d of the task, last event at stream sequence %d, hash %s. `steward audit verify --task %s` must print the same head hash.",
		r.EventCount, r.LastSequence, r.LastEventHash, r.TaskId)
}

// statusLine says where the task stands, and never more than that: a
// produced task is the agent's word, not an accepted result.
func statusLine(r *stewardv1.Receipt) string {
	s := "**" + task.StatusName(r.Status) + "**"
	switch r.Status {
	case stewardv1.TaskStatus_TASK_STATUS_PRODUCED:
		s += " (the agent reports a result; it has not been accepted)"
	case stewardv1.TaskStatus_TASK_STATUS_ACCEPTED:
		s += " (accepted)"
	default:
		s += " (not accepted)"
	}
	if r.StatusReason != "" {
		s += " — " + text(r.StatusReason)
	}
	return s
}

// callResult is where a call's result is, or why there is none.
func callResult(c *stewardv1.ReceiptCall) string {
	if c.ResultRef != "" || c.ResultHash != "" {
		s := "inline" // a small result travels in the outcome itself
		if c.ResultRef != "" {
			s = code(c.ResultRef, true)
		}
		if c.ResultHash != "" {
			s += " hash " + code(c.ResultHash, true)
		}
		return s
	}
	reason := text(c.Reason)
	if c.FailureClass != stewardv1.FailureClass_FAILURE_CLASS_UNSPECIFIED && c.Status == stewardv1.ActionStatus_ACTION_STATUS_FAILED {
		reason = withReason(enumWords(c.FailureClass.String(), "FAILURE_CLASS_"), reason)
	}
	return reason
}

func callPeople(c *stewardv1.ReceiptCall) string {
	var out []string
	if c.ApprovedBy != "" {
		out = append(out, "approved by "+text(c.ApprovedBy))
	}
	switch {
	case c.ExecutedBy != "":
		out = append(out, "executed by "+text(c.ExecutedBy)+", a person")
		if len(c.Evidence) > 0 {
			out = append(out, "evidence: "+text(strings.Join(c.Evidence, ", ")))
		}
	case c.SettledBy != "":
		out = append(out, "settled by "+text(c.SettledBy))
	}
	if c.AmendmentOf != "" {
		out = append(out, "amends "+code(c.AmendmentOf, true))
	}
	if c.AmendedAs != "" {
		out = append(out, "amended as "+code(c.AmendedAs, true))
	}
	return strings.Join(out, "; ")
}

func approvalDecision(a *stewardv1.ReceiptApproval, action stewardv1.ActionStatus) string {
	switch {
	case a.Decision == stewardv1.ApprovalDecision_APPROVAL_DECISION_APPROVE:
		return "approved"
	case a.Decision == stewardv1.ApprovalDecision_APPROVAL_DECISION_REJECT:
		return "rejected"
	case a.Decision == stewardv1.ApprovalDecision_APPROVAL_DECISION_AMEND:
		return "amended, as " + code(a.AmendedActionId, true)
	case a.Decision == stewardv1.ApprovalDecision_APPROVAL_DECISION_PERSON_EXECUTES:
		return "approved, a person executes it"
	case a.Withdrawn && a.PlanVersion != 0:
		return "withdrawn (the plan was revised)"
	case action == stewardv1.ActionStatus_ACTION_STATUS_WITHDRAWN:
		return "withdrawn (the action was edited)"
	case action == stewardv1.ActionStatus_ACTION_STATUS_DENIED:
		return "closed undecided (the action was denied; see its reason)"
	default:
		return "open"
	}
}

// roundDecision says how an acceptance round ended, in words.
func roundDecision(r *stewardv1.AcceptanceRound) string {
	switch r.Decision {
	case stewardv1.AcceptanceDecision_ACCEPTANCE_DECISION_PENDING:
		return "checks passed; waiting for the acceptance owner"
	case stewardv1.AcceptanceDecision_ACCEPTANCE_DECISION_ACCEPTED:
		return "accepted"
	case stewardv1.AcceptanceDecision_ACCEPTANCE_DECISION_RETURNED:
		return "returned for revision"
	case stewardv1.AcceptanceDecision_ACCEPTANCE_DECISION_CHECKS_FAILED:
		return "checks failed"
	}
	return "undecided"
}

func actionStatusName(s stewardv1.ActionStatus) string {
	return enumWords(s.String(), "ACTION_STATUS_")
}
