package state

import (
	"fmt"
	"strings"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

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
	line := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }

	line("# Receipt: task %s — %s", code(r.TaskId, false), orNone(text(r.Intent)))
	line("")
	line("Every line below is an event recorded on the task's log. Nothing here repeats an agent's own report of its work as fact.")
	line("")
	line("- **Status:** %s", statusLine(r))
	if r.Partial {
		line("- **PARTIAL RECEIPT:** the task has not run to an end on its own: it is %s, with %d failed and %d unfinished actions.",
			task.StatusName(r.Status), len(r.Progress.GetFailed()), len(r.Progress.GetRemaining()))
	} else {
		line("- **Partial:** no")
	}
	line("- **Desired outcome (from the contract):** %s", orNone(text(r.DesiredOutcome)))
	line("- **Input version:** %s", orNone(code(r.InputVersion, false)))
	line("- **Actions:** %d done, %d failed, %d unfinished", len(r.Progress.GetDone()), len(r.Progress.GetFailed()), len(r.Progress.GetRemaining()))
	contextMarkdown(&b, r)

	line("")
	line("## Tool calls")
	line("")
	if len(r.Calls) == 0 {
		line("No actions were proposed.")
	} else {
		line("| Action | Tool | Target | Status | Attempts | Result or reason | Approved / settled by |")
		line("| --- | --- | --- | --- | ---: | --- | --- |")
		for _, c := range r.Calls {
			action := code(c.ActionId, true)
			if c.Compensates != "" {
				action += " (undoes " + code(c.Compensates, true) + ")"
			}
			tool := c.Tool
			if c.ToolVersion != "" {
				tool += "@" + c.ToolVersion
			}
			line("| %s | %s | %s | %s | %d | %s | %s |", action, code(tool, true), orDash(code(c.Target, true)),
				actionStatusName(c.Status), c.Attempts, orDash(callResult(c)), orDash(callPeople(c)))
		}
	}

	line("")
	line("## Approvals")
	line("")
	if len(r.Approvals) == 0 {
		line("No approvals were requested.")
	} else {
		status := map[string]stewardv1.ActionStatus{}
		for _, c := range r.Calls {
			status[c.ActionId] = c.Status
		}
		line("| Approval | Action | Required roles | Decision | By | Comment | Requested | Decided |")
		line("| --- | --- | --- | --- | --- | --- | --- | --- |")
		for _, a := range r.Approvals {
			of := code(a.ActionId, true)
			if a.ActionId == "" {
				of = fmt.Sprintf("plan version %d", a.PlanVersion)
			}
			line("| %s | %s | %s | %s | %s | %s | %s | %s |", code(a.ApprovalId, true), of,
				orDash(text(strings.Join(a.RequiredRoles, " or "))), approvalDecision(a, status[a.ActionId]),
				orDash(text(a.DecidedBy)), orDash(text(a.Comment)), orDash(when(a.RequestedAt)), orDash(when(a.DecidedAt)))
		}
	}

	planMarkdown(line, r.Plan)
	questionsMarkdown(line, r.Questions)

	line("")
	line("## Policy revisions")
	line("")
	if len(r.PolicyRevisions) == 0 {
		line("No policy evaluation was recorded.")
	} else {
		line("The policy bundle revisions that evaluated the task's actions and plan:")
		line("")
		for _, rev := range r.PolicyRevisions {
			line("- %s", code(rev, false))
		}
	}

	line("")
	line("## Retries and errors")
	line("")
	line("Retries (dispatches beyond each action's first): %d", r.Retries)
	line("")
	if len(r.Errors) == 0 {
		line("No failures or unknown outcomes were recorded.")
	} else {
		for i, e := range r.Errors {
			line("%d. %s", i+1, text(e))
		}
	}

	line("")
	line("## Budget used")
	line("")
	used := r.GetBudgetUsed()
	line("- **Tokens:** %d", used.GetTokens())
	line("- **Cost:** %d micro-units%s", used.GetCostMicros(), orEmptyText(" of "+text(used.GetCurrency()), used.GetCurrency()))
	line("")
	line("## Artifacts")
	line("")
	if len(r.Artifacts) == 0 {
		line("No artifacts were submitted.")
	} else {
		line("| Artifact | Version | Media type | Size (bytes) | SHA-256 | Where | Produced by |")
		line("| --- | ---: | --- | ---: | --- | --- | --- |")
		for _, a := range r.Artifacts {
			line("| %s | %d | %s | %d | %s | %s | %s |", code(a.Name, true), a.Version, orDash(code(a.MediaType, true)), a.Size,
				code(a.Hash, true), orDash(code(a.Ref, true)), orDash(code(a.ActionId, true)))
		}
	}

	line("")
	line("## Acceptance")
	line("")
	if len(r.AcceptanceRounds) == 0 {
		line("The task has not been marked produced.")
	}
	for _, round := range r.AcceptanceRounds {
		line("### Round %d — %s", round.Round, roundDecision(round))
		line("")
		line("Produced by %s at %s, covering %s.", orNone(text(round.ProducedBy)), orNone(when(round.ProducedAt)), orDash(code(strings.Join(round.Artifacts, ", "), false)))
		if round.DecidedBy != "" {
			line("Decided by %s at %s%s.", text(round.DecidedBy), orNone(when(round.DecidedAt)), orEmptyText(": "+text(strings.Join(round.Reasons, "; ")), strings.Join(round.Reasons, "")))
		}
		line("")
		if len(round.Checks) == 0 {
			line("The contract has no acceptance criteria.")
		} else {
			line("| Check | Expression | Result | Detail |")
			line("| --- | --- | --- | --- |")
			for _, c := range round.Checks {
				result := "failed"
				if c.Passed {
					result = "passed"
				}
				line("| %s | %s | %s | %s |", code(c.CriterionId, true), orDash(code(c.Expression, true)), result, orDash(text(c.Detail)))
			}
		}
		line("")
	}

	line("")
	line("## Audit findings")
	line("")
	if len(r.Findings) == 0 {
		line("No auditor has recorded a finding.")
	} else {
		line("| Finding | Kind | Action | Description | Recorded by | Recorded |")
		line("| --- | --- | --- | --- | --- | --- |")
		for _, f := range r.Findings {
			line("| %s | %s | %s | %s | %s | %s |", code(f.FindingId, true), enumWords(f.Kind.String(), "FINDING_KIND_"),
				orDash(code(f.ActionId, true)), orDash(text(f.Description)), orDash(text(f.RecordedBy)), orDash(when(f.RecordedAt)))
		}
	}

	line("")
	line("## Credential")
	line("")
	if c := r.Credential; c == nil {
		line("No credential was issued.")
	} else {
		line("- **Credential:** %s for %s, signed with key %s, expires %s", code(c.CredentialId, false), orNone(text(c.Principal)), orNone(code(c.KeyId, false)), orNone(when(c.ExpiresAt)))
		if len(c.Chain) > 0 {
			line("- **Delegated from:** %s", code(strings.Join(c.Chain, " → "), false))
		}
		if c.Renewals > 0 {
			line("- **Renewed:** %d times; the expiry above is the last renewal's", c.Renewals)
		}
		if c.Revoked {
			line("- **Revoked:** %s", orNone(text(c.RevokedReason)))
		}
	}

	line("")
	line("## Timings")
	line("")
	line("- **Created:** %s", orNone(when(r.CreatedAt)))
	line("- **Last event:** %s", orNone(when(r.UpdatedAt)))
	if r.Elapsed != nil {
		line("- **Elapsed:** %s", r.Elapsed.AsDuration().Round(time.Millisecond))
	}

	line("")
	line("---")
	line("")
	// Plain hex, not a code span: the line is meant to be compared with
	// the head hash that `steward audit verify` prints.
	line("Covers events 1..%d of the task, last event at stream sequence %d, hash %s. `steward audit verify --task %s` must print the same head hash.",
		r.EventCount, r.LastSequence, r.LastEventHash, r.TaskId)
	return b.String()
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
	if c.SettledBy != "" {
		out = append(out, "settled by "+text(c.SettledBy))
	}
	return strings.Join(out, "; ")
}

func approvalDecision(a *stewardv1.ReceiptApproval, action stewardv1.ActionStatus) string {
	switch {
	case a.Decision == stewardv1.ApprovalDecision_APPROVAL_DECISION_APPROVE:
		return "approved"
	case a.Decision == stewardv1.ApprovalDecision_APPROVAL_DECISION_REJECT:
		return "rejected"
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

// when formats a time in UTC, to the millisecond; "" when unset.
func when(ts *timestamppb.Timestamp) string {
	if ts == nil {
		return ""
	}
	return ts.AsTime().UTC().Format("2006-01-02T15:04:05.000Z")
}

// mdEscaper backslash-escapes the characters that would make text format
// itself (emphasis, links, HTML, code, tables); newlines become spaces so
// that one value stays on one line.
var mdEscaper = strings.NewReplacer(
	`\`, `\\`, "`", "\\`", `*`, `\*`, `_`, `\_`, `[`, `\[`, `]`, `\]`,
	`<`, `\<`, `>`, `\>`, `|`, `\|`, `~`, `\~`, `&`, `\&`,
	"\r\n", " ", "\n", " ", "\r", " ",
)

// text escapes s for Markdown, in running text and in table cells alike.
func text(s string) string { return mdEscaper.Replace(s) }

// code puts s in a code span, fenced with more backticks than s holds in a
// row. In a table cell, "|" is escaped: GFM splits cells before it reads
// code spans.
func code(s string, cell bool) string {
	if s == "" {
		return ""
	}
	s = strings.NewReplacer("\r\n", " ", "\n", " ", "\r", " ").Replace(s)
	if cell {
		s = strings.ReplaceAll(s, "|", `\|`)
	}
	longest, run := 0, 0
	for _, r := range s {
		if r == '`' {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	fence := strings.Repeat("`", longest+1)
	if strings.HasPrefix(s, "`") || strings.HasSuffix(s, "`") {
		s = " " + s + " "
	}
	return fence + s + fence
}

func orDash(s string) string {
	if s == "" {
		return "—"
	}
	return s
}

func orNone(s string) string {
	if s == "" {
		return "not recorded"
	}
	return s
}

// orEmptyText is s when cond is not empty, else "".
func orEmptyText(s, cond string) string {
	if cond == "" {
		return ""
	}
	return s
}
