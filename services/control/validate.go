package control

import (
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/steward-run/steward/pkg/errs"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/limits"
	"github.com/steward-run/steward/pkg/toolpin"
)

// Limits on a task contract. They keep one task's events small enough to
// replay quickly and keep a careless client from filling the log.
const (
	MaxTextLen   = 4096                // intent, desired outcome, descriptions
	MaxRefLen    = limits.MaxID        // principal and credential refs, ids, tool names
	MaxListLen   = limits.MaxList      // any repeated field
	MaxRequestID = limits.MaxRequestID // request ids
	MaxReasonLen = 1024
)

// validateCreate checks a CreateTask request and names the first field
// that is wrong, as the client spells it. A delegation is made with
// DelegateTask, which checks it against the parent's credential; a
// contract on CreateTask may not claim one.
func validateCreate(req *stewardv1.CreateTaskRequest, now time.Time) error {
	if err := checkText("request_id", req.RequestId, MaxRequestID, false); err != nil {
		return err
	}
	return validateClientContract(req.Contract, now)
}

// validateClientContract checks a contract as a client sends it. The
// fields Steward owns are refused rather than ignored or stored: the task
// id is derived from the request, the credential is issued by governance
// (a credential_ref the client chose would otherwise stand in a permit for
// a task that has none yet), and a delegation is for Steward to record,
// never for a client to claim.
func validateClientContract(c *stewardv1.TaskContract, now time.Time) error {
	switch {
	case c == nil:
		return errs.Field("contract", "is required")
	case c.TaskId != "":
		return errs.Field("contract.task_id", "is set by Steward, not by the client")
	case c.CredentialRef != "":
		return errs.Field("contract.credential_ref", "is set by Steward (governance issues the credential), not by the client")
	case len(c.DelegationChain) > 0:
		return errs.Field("contract.delegation_chain", "is set by Steward (DelegateTask), not by the client")
	case c.ParentTaskId != "":
		return errs.Field("contract.parent_task_id", "is set by Steward (DelegateTask), not by the client")
	}
	return validateContract(c, now)
}

// validateContract checks a task contract, from CreateTask or
// DelegateTask, and names the first field that is wrong.
func validateContract(c *stewardv1.TaskContract, now time.Time) error {
	checks := []error{
		checkText("contract.intent", c.Intent, MaxTextLen, true),
		checkText("contract.desired_outcome", c.DesiredOutcome, MaxTextLen, true),
		checkText("contract.requester_ref", c.RequesterRef, MaxRefLen, true),
		checkText("contract.authorizer_ref", c.AuthorizerRef, MaxRefLen, false),
		checkText("contract.approval_backup_ref", c.ApprovalBackupRef, MaxRefLen, false),
		checkBackup(c),
		checkInputLadder(c),
		checkText("contract.accountable_owner_ref", c.AccountableOwnerRef, MaxRefLen, true),
		checkText("contract.acceptance_owner_ref", c.AcceptanceOwnerRef, MaxRefLen, false),
		checkText("contract.credential_ref", c.CredentialRef, MaxRefLen, false),
		checkRiskTier(c.RiskTier),
		checkBudget(c.Budget),
		checkMilestones(c),
		checkFallbacks(c), // fallback_check.go
		checkDeadline(c, now),
		checkList("contract.delegation_chain", len(c.DelegationChain)),
		checkAllowedTools(c.AllowedTools),
		checkNames("contract.scopes", c.Scopes),
		checkCriteria(c.AcceptanceCriteria),
		checkAcceptance(c),
		checkRecovery(c.RecoveryPolicy),
		checkLimits(c.Limits),
		checkTimers(c.Timers),
		checkObjectiveRef(c.ObjectiveId),
	}
	for _, err := range checks {
		if err != nil {
			return err
		}
	}
	if err := checkContextRefs("contract.context_refs", c.ContextRefs); err != nil {
		return err
	}
	if s := c.InputSnapshot; s != nil {
		if err := checkText("contract.input_snapshot.version", s.Version, MaxRefLen, false); err != nil {
			return err
		}
		if err := checkContextRefs("contract.input_snapshot.inputs", s.Inputs); err != nil {
			return err
		}
	}
	return nil
}

// checkAcceptance checks who accepts the task's result: a criterion that
// asks for a reviewer needs an acceptance owner, and under separation of
// duties the owner may not be the requester.
func checkAcceptance(c *stewardv1.TaskContract) error {
	for i, cr := range c.AcceptanceCriteria {
		if cr.RequiresReviewer && c.AcceptanceOwnerRef == "" {
			return errs.Field(fmt.Sprintf("contract.acceptance_criteria[%d].requires_reviewer", i), "needs contract.acceptance_owner_ref: nobody is named to review")
		}
	}
	if c.SeparationOfDuties {
		switch {
		case c.AcceptanceOwnerRef == "":
			return errs.Field("contract.acceptance_owner_ref", "is required with separation_of_duties: someone other than the requester must accept")
		case c.AcceptanceOwnerRef == c.RequesterRef:
			return errs.Field("contract.acceptance_owner_ref", "%s is also the requester; separation_of_duties needs someone else", errs.Quote(c.AcceptanceOwnerRef))
		case c.AuthorizerRef != "" && c.AuthorizerRef == c.RequesterRef:
			// The named authorizer must approve, and the requester may not.
			return errs.Field("contract.authorizer_ref", "%s is also the requester; separation_of_duties needs someone else to approve", errs.Quote(c.AuthorizerRef))
		case c.ApprovalBackupRef != "" && c.ApprovalBackupRef == c.RequesterRef:
			return errs.Field("contract.approval_backup_ref", "%s is also the requester; separation_of_duties needs someone else to approve", errs.Quote(c.ApprovalBackupRef))
		}
	}
	return nil
}

// checkTime refuses timestamps outside what JSON can carry: stored, they
// would make the task unreadable to every JSON client.
func checkTime(field string, ts *timestamppb.Timestamp) error {
	if ts == nil {
		return nil
	}
	if err := ts.CheckValid(); err != nil {
		return errs.Field(field, "is not a valid time: %v", err)
	}
	return nil
}

func checkText(field, s string, maxLen int, required bool) error {
	switch {
	case required && s == "":
		return errs.Field(field, "is required")
	case len(s) > maxLen:
		return &errs.Error{Code: errs.TooLarge, Field: field, Message: fmt.Sprintf("is %d bytes; the limit is %d", len(s), maxLen)}
	case !utf8.ValidString(s):
		return errs.Field(field, "is not valid UTF-8")
	}
	return nil
}

func checkList(field string, n int) error {
	if n > MaxListLen {
		return &errs.Error{Code: errs.TooLarge, Field: field, Message: fmt.Sprintf("has %d entries; the limit is %d", n, MaxListLen)}
	}
	return nil
}

func checkRiskTier(t stewardv1.RiskTier) error {
	if t == stewardv1.RiskTier_RISK_TIER_UNSPECIFIED {
		return errs.Field("contract.risk_tier", "is required (RISK_TIER_LOW, _MEDIUM, _HIGH or _CRITICAL)")
	}
	if _, ok := stewardv1.RiskTier_name[int32(t)]; !ok {
		return errs.Field("contract.risk_tier", "%d is not a known risk tier", t)
	}
	return nil
}

func checkBudget(b *stewardv1.Budget) error {
	if b == nil {
		return nil
	}
	if b.MaxTokens < 0 {
		return errs.Field("contract.budget.max_tokens", "must not be negative")
	}
	if b.MaxCostMicros < 0 {
		return errs.Field("contract.budget.max_cost_micros", "must not be negative")
	}
	if (b.MaxCostMicros > 0 || b.Currency != "") && len(b.Currency) != 3 {
		return errs.Field("contract.budget.currency", "must be a three-letter ISO 4217 code")
	}
	if err := checkList("contract.budget.milestones", len(b.Milestones)); err != nil {
		return err
	}
	seen := map[string]bool{}
	var tokens, cost int64
	for i, m := range b.Milestones {
		f := fmt.Sprintf("contract.budget.milestones[%d]", i)
		if err := checkText(f+".milestone_id", m.MilestoneId, MaxRefLen, true); err != nil {
			return err
		}
		if seen[m.MilestoneId] {
			return errs.Field(f+".milestone_id", "%s appears twice", errs.Quote(m.MilestoneId))
		}
		seen[m.MilestoneId] = true
		if m.MaxTokens < 0 {
			return errs.Field(f+".max_tokens", "must not be negative")
		}
		if m.MaxCostMicros < 0 {
			return errs.Field(f+".max_cost_micros", "must not be negative")
		}
		// Compare with what is left rather than adding first, so that a
		// huge milestone cannot wrap the sum around.
		if b.MaxTokens > 0 && m.MaxTokens > b.MaxTokens-tokens {
			return errs.Field(f+".max_tokens", "milestone token budgets add up to more than the task's %d", b.MaxTokens)
		}
		if b.MaxCostMicros > 0 && m.MaxCostMicros > b.MaxCostMicros-cost {
			return errs.Field(f+".max_cost_micros", "milestone cost budgets add up to more than the task's %d", b.MaxCostMicros)
		}
		tokens, cost = tokens+m.MaxTokens, cost+m.MaxCostMicros
	}
	return nil
}

func checkDeadline(c *stewardv1.TaskContract, now time.Time) error {
	if c.Deadline == nil {
		return nil
	}
	if err := checkTime("contract.deadline", c.Deadline); err != nil {
		return err
	}
	if !c.Deadline.AsTime().After(now) {
		return errs.Field("contract.deadline", "%s is not in the future", c.Deadline.AsTime().Format(time.RFC3339))
	}
	return nil
}

// checkNames checks a list of names, such as tools or scopes.
func checkNames(field string, names []string) error {
	if err := checkList(field, len(names)); err != nil {
		return err
	}
	for i, n := range names {
		if err := checkText(fmt.Sprintf("%s[%d]", field, i), n, MaxRefLen, true); err != nil {
			return err
		}
	}
	return nil
}

// checkAllowedTools checks the contract's tools: each a name, or a pin
// name@version that allows that version only (toolpin), and each tool
// named once — a pin beside its bare name would mean nothing.
func checkAllowedTools(tools []string) error {
	const field = "contract.allowed_tools"
	if err := checkNames(field, tools); err != nil {
		return err
	}
	seen := make(map[string]int, len(tools))
	for i, entry := range tools {
		f := fmt.Sprintf("%s[%d]", field, i)
		name, version := toolpin.Split(entry)
		switch {
		case name == "":
			return errs.Field(f, "%s names no tool before its @", errs.Quote(entry))
		case strings.Contains(entry, "@") && version == "":
			return errs.Field(f, "%s pins no version after its @ (name@version, or the bare name for any version)", errs.Quote(entry))
		case strings.Contains(version, "@"):
			return errs.Field(f, "%s has more than one @ (name@version)", errs.Quote(entry))
		}
		if j, dup := seen[name]; dup {
			return errs.Field(f, "%s names tool %s again (%s[%d]); name each tool once, bare or pinned", errs.Quote(entry), errs.Quote(name), field, j)
		}
		seen[name] = i
	}
	return nil
}

func checkRecovery(r *stewardv1.RecoveryPolicy) error {
	if r == nil {
		return nil
	}
	if _, ok := stewardv1.RecoveryMode_name[int32(r.Mode)]; !ok {
		return errs.Field("contract.recovery_policy.mode", "%d is not a known recovery mode", r.Mode)
	}
	switch {
	case r.MaxAttempts > 0 && r.Mode != stewardv1.RecoveryMode_RECOVERY_MODE_RETRY:
		// Only RETRY proposes again; accepted here it would do nothing.
		return errs.Field("contract.recovery_policy.max_attempts", "is set, but mode is %s: only RECOVERY_MODE_RETRY proposes a failed action again", r.Mode)
	case r.MaxAttempts > MaxRecoveryAttempts:
		return errs.Field("contract.recovery_policy.max_attempts", "%d is more than %d", r.MaxAttempts, MaxRecoveryAttempts)
	}
	return nil
}

func checkReason(s string) error { return checkText("reason", s, MaxReasonLen, false) }

// The documented ranges of a contract's timers (contract.timers). Zero
// means the default; anything else outside its range is refused.
const (
	// MinApprovalTimer and MaxApprovalTimer bound approval_remind_after
	// and approval_suspend_after: people need a minute to answer, and a
	// wait of more than a year is a typo.
	MinApprovalTimer = time.Minute
	MaxApprovalTimer = 365 * 24 * time.Hour
	// MinStallAfter and MaxStallAfter bound stall_after: a live call
	// heartbeats every few seconds (a third of the execution lease); a
	// working task silent for a month is stalled by any measure. They bound
	// stall_suspend_after too: the planes' re-drive takes milliseconds, and
	// a mark that stands a month has been seen.
	MinStallAfter = time.Minute
	MaxStallAfter = 30 * 24 * time.Hour
	// MinAgentTimer and MaxAgentTimer bound the agent's liveness timers
	// (agent_ask_after, agent_escalate_after, agent_suspend_after): an
	// agent heartbeats every few seconds; one silent for a month is gone.
	MinAgentTimer = time.Minute
	MaxAgentTimer = 30 * 24 * time.Hour
)

// MaxLimit bounds the loop guards a contract may set.
const MaxLimit = 100_000

func checkLimits(l *stewardv1.TaskLimits) error {
	switch {
	case l == nil:
		return nil
	case l.MaxActions > MaxLimit:
		return errs.Field("contract.limits.max_actions", "is more than %d", MaxLimit)
	case l.MaxSameFailures > MaxLimit:
		return errs.Field("contract.limits.max_same_failures", "is more than %d", MaxLimit)
	}
	return nil
}

// checkAgentTimers refuses an agent liveness ladder out of order: an ask
// first, then an escalation, then a suspension, each later than the one
// before; escalating or suspending with nobody asked first.
func checkAgentTimers(tm *stewardv1.TaskTimers) error {
	ask, esc, sus := tm.AgentAskAfter.AsDuration(), tm.AgentEscalateAfter.AsDuration(), tm.AgentSuspendAfter.AsDuration()
	switch {
	case ask == 0 && esc > 0:
		return errs.Field("contract.timers.agent_escalate_after", "needs agent_ask_after: the agent is asked before its owners hear")
	case ask == 0 && sus > 0:
		return errs.Field("contract.timers.agent_suspend_after", "needs agent_ask_after: the agent is asked before its task is suspended")
	case esc > 0 && esc <= ask:
		return errs.Field("contract.timers.agent_escalate_after", "must be longer than agent_ask_after")
	case sus > 0 && sus <= max(ask, esc):
		return errs.Field("contract.timers.agent_suspend_after", "must be longer than agent_ask_after and agent_escalate_after")
	}
	return nil
}

// checkTimers refuses a timer outside its documented range, and a
// suspension that would come before its reminder. Zero means the default.
func checkTimers(tm *stewardv1.TaskTimers) error {
	if tm == nil {
		return nil
	}
	for _, err := range []error{
		limits.Duration("contract.timers.approval_remind_after", tm.ApprovalRemindAfter, MinApprovalTimer, MaxApprovalTimer),
		limits.Duration("contract.timers.approval_suspend_after", tm.ApprovalSuspendAfter, MinApprovalTimer, MaxApprovalTimer),
		limits.Duration("contract.timers.stall_after", tm.StallAfter, MinStallAfter, MaxStallAfter),
		limits.Duration("contract.timers.stall_suspend_after", tm.StallSuspendAfter, MinStallAfter, MaxStallAfter),
		limits.Duration("contract.timers.agent_ask_after", tm.AgentAskAfter, MinAgentTimer, MaxAgentTimer),
		limits.Duration("contract.timers.agent_escalate_after", tm.AgentEscalateAfter, MinAgentTimer, MaxAgentTimer),
		limits.Duration("contract.timers.agent_suspend_after", tm.AgentSuspendAfter, MinAgentTimer, MaxAgentTimer),
		checkAgentTimers(tm),
	} {
		if err != nil {
			return err
		}
	}
	remind, suspend := tm.ApprovalRemindAfter.AsDuration(), tm.ApprovalSuspendAfter.AsDuration()
	if remind > 0 && suspend > 0 && suspend <= remind {
		return errs.Field("contract.timers.approval_suspend_after", "must be longer than approval_remind_after")
	}
	return nil
}
