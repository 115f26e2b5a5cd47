package state

import (
	"fmt"
	"strings"
	"time"

	"github.com/steward-run/steward/pkg/content"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/task"
	"google.golang.org/protobuf/proto"
)

// Timeline tells a task's events as sentences a person can follow.
func Timeline(recs []*stewardv1.EventRecord) []*stewardv1.TimelineEntry {
	return timeline(recs, nil)
}

// timeline is Timeline told to a caller who may not read the task's
// content when b is set: without it (content.Blind.Event).
func timeline(recs []*stewardv1.EventRecord, b *content.Blind) []*stewardv1.TimelineEntry {
	out := make([]*stewardv1.TimelineEntry, 0, len(recs))
	var votes voteTally
	byPerson := map[string]bool{} // action → an approver said a person executes it
	for _, r := range recs {
		ev := r.Event
		if b != nil {
			ev = b.Event(ev)
		}
		note := votes.count(ev)
		if d := ev.GetApprovalDecided(); d.GetDecision() == stewardv1.ApprovalDecision_APPROVAL_DECISION_PERSON_EXECUTES {
			byPerson[d.ActionId] = true
		}
		if st := ev.GetActionSettled(); st != nil && byPerson[st.ActionId] {
			note = personNote
		}
		out = append(out, &stewardv1.TimelineEntry{
			Sequence: r.Sequence,
			Time:     ev.Time,
			Type:     ev.Type,
			Actor:    actorName(ev.Actor),
			Summary:  summary(ev, note),
		})
	}
	return out
}

// personNote is the note of a settlement of an action a person executes.
const personNote = "person"

// voteTally counts the approving votes of approvals that need more than one,
// so that the timeline does not read the first of them as the decision.
type voteTally map[string][2]int // approval id → {approvals so far, required}

// count notes ev and returns what to say of an approving vote: "1 of 2
// approvals; ", or nothing where one approval decides.
func (t *voteTally) count(ev *stewardv1.Event) string {
	switch p := ev.Payload.(type) {
	case *stewardv1.Event_ApprovalRequested:
		ap := p.ApprovalRequested.GetApproval()
		if n := task.RequiredApprovals(ap); n > 1 {
			if *t == nil {
				*t = voteTally{}
			}
			(*t)[ap.GetApprovalId()] = [2]int{0, n}
		}
	case *stewardv1.Event_ApprovalDecided:
		d := p.ApprovalDecided
		v, ok := (*t)[d.ApprovalId]
		if !ok || !task.Approves(d.Decision) {
			return ""
		}
		v[0]++
		(*t)[d.ApprovalId] = v
		return fmt.Sprintf("%d of %d approvals; ", v[0], v[1])
	}
	return ""
}

func actorName(a *stewardv1.Actor) string {
	switch {
	case a == nil:
		return "unknown"
	case a.Plane == "":
		return a.Principal
	default:
		return a.Principal + " via " + a.Plane
	}
}

// summary tells ev in a sentence; note is what the timeline adds from
// earlier events (see voteTally).
func summary(ev *stewardv1.Event, note string) string {
	who := actorName(ev.Actor)
	switch p := ev.Payload.(type) {
	case *stewardv1.Event_TaskCreated:
		c := p.TaskCreated.Contract
		return fmt.Sprintf("%s created the task %q for %s, accountable owner %s, risk %s",
			who, c.GetIntent(), c.GetRequesterRef(), c.GetAccountableOwnerRef(), riskName(c.GetRiskTier()))
	case *stewardv1.Event_TaskStarted:
		return "The task started running"
	case *stewardv1.Event_TaskPaused:
		return withReason(who+" paused the task", p.TaskPaused.Reason)
	case *stewardv1.Event_TaskResumed:
		return withReason(who+" resumed the task", p.TaskResumed.Reason)
	case *stewardv1.Event_TaskCancelled:
		return withReason(who+" cancelled the task", p.TaskCancelled.Reason)
	case *stewardv1.Event_ActionProposed:
		a := p.ActionProposed.Action
		s := fmt.Sprintf("%s proposed action %s: %s %s on %q (%s)", who, a.ActionId, a.Tool, a.ToolVersion, a.Target, effectName(a.EffectClass))
		if a.EditOf != "" {
			s += ", an edit of " + a.EditOf
		}
		if a.AmendmentOf != "" {
			s += ", the amendment of " + a.AmendmentOf
		}
		return s
	case *stewardv1.Event_PolicyEvaluated:
		return policySaid(p.PolicyEvaluated.Snapshot, p.PolicyEvaluated.ActionId)
	case *stewardv1.Event_ActionDenied:
		return withReason("Action "+p.ActionDenied.ActionId+" was denied", strings.Join(p.ActionDenied.Reasons, "; "))
	case *stewardv1.Event_ApprovalRequested:
		ap := p.ApprovalRequested.Approval
		from := "a person"
		if n := task.RequiredApprovals(ap); n > 1 {
			from = fmt.Sprintf("%d different people", n)
		}
		return fmt.Sprintf("Approval %s requested from %s with role %s: %s", ap.ApprovalId, from, strings.Join(ap.RequiredRoles, " or "), ap.ExpectedImpact)
	case *stewardv1.Event_ApprovalDecided:
		return decidedSummary(p.ApprovalDecided, note)
	case *stewardv1.Event_ActionSettled:
		return settledSummary(p.ActionSettled, note)

	case *stewardv1.Event_ActionWithdrawn:
		return fmt.Sprintf("%s withdrew action %s, replaced by the edited action %s", who, p.ActionWithdrawn.ActionId, p.ActionWithdrawn.ReplacedBy)
	case *stewardv1.Event_ActionPermitted:
		pm := p.ActionPermitted.Permit
		issued := fmt.Sprintf("Permit %s issued for action %s", pm.GetPermitId(), pm.GetActionId())
		if snap := p.ActionPermitted.Snapshot; snap != nil {
			// Policy's evaluation recorded with the permit: one entry
			// that still says what policy said.
			return policySaid(snap, pm.GetActionId()) + "; " + issued
		}
		return issued
	case *stewardv1.Event_ActionClaimed:
		return fmt.Sprintf("Worker %s claimed the permit of action %s", p.ActionClaimed.Worker, p.ActionClaimed.ActionId)
	case *stewardv1.Event_ActionDispatched:
		// The worker is named: a first dispatch may carry the claim, with no
		// ActionClaimed before it to say who holds the action.
		d := p.ActionDispatched
		if d.Worker != "" {
			return fmt.Sprintf("Action %s dispatched to its tool by worker %s (attempt %d)", d.ActionId, d.Worker, d.Attempt)
		}
		return fmt.Sprintf("Action %s dispatched to its tool (attempt %d)", d.ActionId, d.Attempt)
	case *stewardv1.Event_ActionOutcomeRecorded:
		return outcomeSummary(p.ActionOutcomeRecorded)
	default:
		return otherSummary(who, ev)
	}
}

// otherSummary tells the events summary leaves to the groups that tell
// them, each "" for an event not its own; any other event by its type.
func otherSummary(who string, ev *stewardv1.Event) string {
	for _, tell := range []func() string{
		func() string { return failureSummary(ev) },
		func() string { return responsibilitySummary(ev) },
		func() string { return planSummary(ev) },
		func() string { return decisionSummary(who, ev) },
		func() string { return revisionSummary(who, ev) },
		func() string { return fallbackSummary(ev) },
	} {
		if s := tell(); s != "" {
			return s
		}
	}
	return fmt.Sprintf("%s recorded %s", who, ev.Type)
}

// decidedSummary tells a vote on an approval; note is what count said of
// it. The action's hash is left out for a caller who may not read the
// task's content (content.Blind.Event).
func decidedSummary(d *stewardv1.ApprovalDecided, note string) string {
	verb := "rejected"
	switch d.Decision {
	case stewardv1.ApprovalDecision_APPROVAL_DECISION_APPROVE:
		verb = "approved"
	case stewardv1.ApprovalDecision_APPROVAL_DECISION_PERSON_EXECUTES:
		verb = "approved, for a person to execute (no permit),"
	case stewardv1.ApprovalDecision_APPROVAL_DECISION_AMEND:
		verb = "amended"
		d = proto.CloneOf(d)
		d.Comment = strings.TrimSuffix("replaced by action "+d.AmendedActionId+": "+d.Comment, ": ")
	}
	if d.PlanHash != "" {
		return withReason(fmt.Sprintf("%s %s the plan (%shash %.12s…)", d.DecidedBy, verb, note, d.PlanHash), d.Comment)
	}
	if d.ActionHash == "" {
		// Hidden from a caller who may not read the task's content.
		tally := ""
		if note != "" {
			tally = " (" + strings.TrimSuffix(note, "; ") + ")"
		}
		return withReason(fmt.Sprintf("%s %s action %s%s", d.DecidedBy, verb, d.ActionId, tally), d.Comment)
	}
	return withReason(fmt.Sprintf("%s %s action %s (%shash %.12s…)", d.DecidedBy, verb, d.ActionId, note, d.ActionHash), d.Comment)
}

// settledSummary tells a settlement: of an unknown outcome, or, with
// personNote, of a person's execution; with the evidence given.
func settledSummary(st *stewardv1.ActionSettled, note string) string {
	s := fmt.Sprintf("%s settled the unknown outcome of action %s: %s", st.SettledBy, st.ActionId, enumWords(st.State.String(), "SETTLE_STATE_"))
	if note == personNote {
		s = fmt.Sprintf("%s, who was to execute action %s, says it %s", st.SettledBy, st.ActionId, map[bool]string{true: "is done", false: "was not done"}[st.State == stewardv1.SettleState_SETTLE_STATE_SUCCEEDED])
	}
	if len(st.Evidence) > 0 {
		s += "; evidence: " + strings.Join(st.Evidence, ", ")
	}
	return withReason(s, st.Reason)
}

// outcomeSummary tells an action's outcome: where its result is, unless
// the caller may not read the task's content (content.Blind.Event).
func outcomeSummary(r *stewardv1.ActionOutcomeRecorded) string {
	o := r.Outcome
	switch o.GetStatus() {
	case stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED:
		switch {
		case len(o.Result) > 0:
			return fmt.Sprintf("Action %s succeeded; result inline (%d bytes)", r.ActionId, len(o.Result))
		case o.ResultRef != "":
			return fmt.Sprintf("Action %s succeeded; result at %s", r.ActionId, o.ResultRef)
		}
		// No result, or one the caller may not read.
		return fmt.Sprintf("Action %s succeeded", r.ActionId)
	case stewardv1.ActionStatus_ACTION_STATUS_FAILED:
		return withReason(fmt.Sprintf("Action %s failed (%s)", r.ActionId, enumWords(o.FailureClass.String(), "FAILURE_CLASS_")), o.Reason)
	default:
		return withReason(fmt.Sprintf("The outcome of action %s is unknown: the call went out and no answer came back", r.ActionId), o.Reason)
	}
}

// policySaid tells what policy said of an action in one snapshot.
func policySaid(snap *stewardv1.PolicySnapshot, actionID string) string {
	return withReason(fmt.Sprintf("Policy %s said %s for action %s", shortRev(snap.GetBundleRevision()), decisionName(snap.GetDecision()), actionID), strings.Join(snap.GetReasons(), "; "))
}

// failureSummary tells the events of the bad days: failures, waits,
// settlements, compensation, guards and timers.
func failureSummary(ev *stewardv1.Event) string {
	who := actorName(ev.Actor)
	switch p := ev.Payload.(type) {
	case *stewardv1.Event_TaskFailed:
		return withReason(who+" failed the task", p.TaskFailed.Reason)
	case *stewardv1.Event_TaskCompensating:
		c := p.TaskCompensating
		return withReason(fmt.Sprintf("The task is undoing %d actions (%s), newest first, and will then be %s",
			len(c.ActionIds), strings.Join(c.ActionIds, ", "), enumWords(c.FinalStatus.String(), "TASK_STATUS_")), c.Reason)
	case *stewardv1.Event_TaskNeedsInput:
		return needsInputSummary(who, p.TaskNeedsInput)
	case *stewardv1.Event_InputProvided:
		return inputProvidedSummary(who, p.InputProvided)
	case *stewardv1.Event_TaskSuspended:
		switch p.TaskSuspended.Cause {
		case stewardv1.SuspendCause_SUSPEND_CAUSE_DEADLINE:
			return withReason("The task was suspended at its deadline", p.TaskSuspended.Reason)
		case stewardv1.SuspendCause_SUSPEND_CAUSE_INPUT_OVERDUE:
			return withReason("The task was suspended: its question waited too long", p.TaskSuspended.Reason)
		}
		return withReason("The task was suspended", p.TaskSuspended.Reason)
	case *stewardv1.Event_TaskStalled:
		return withReason("The task looks stalled", p.TaskStalled.Reason)
	case *stewardv1.Event_ActionWaiting:
		w := p.ActionWaiting
		what := "retries"
		switch w.Kind {
		case stewardv1.WaitKind_WAIT_KIND_BREAKER:
			what = "waits for a circuit breaker"
		case stewardv1.WaitKind_WAIT_KIND_LIMIT:
			what = "waits for its tool's limits"
		}
		return withReason(fmt.Sprintf("Action %s %s: attempt %d at %s", w.ActionId, what, w.NextAttempt, w.Until.AsTime().UTC().Format("15:04:05.000")), w.Reason)
	case *stewardv1.Event_ActionRevalidating:
		r := p.ActionRevalidating
		return withReason(fmt.Sprintf("Permit %s of action %s was not used (%s): policy, credential and budget are checked again", r.PermitId, r.ActionId, enumWords(r.Reason.String(), "REVALIDATION_REASON_")), r.Detail)
	case *stewardv1.Event_ActionHeartbeat:
		return fmt.Sprintf("Action %s is still running (attempt %d, heartbeat %d)", p.ActionHeartbeat.ActionId, p.ActionHeartbeat.Attempt, p.ActionHeartbeat.Beat)
	case *stewardv1.Event_BudgetConsumed:
		c := p.BudgetConsumed
		return withReason(fmt.Sprintf("%s reported %d tokens and %d micro-units spent", who, c.Tokens, c.CostMicros), c.Source)
	case *stewardv1.Event_BudgetAlerted:
		a := p.BudgetAlerted
		return fmt.Sprintf("The task has spent %d%% of its %s budget (%d of %d)", a.Percent, a.Dimension, a.Used, a.Limit)
	case *stewardv1.Event_BudgetReleased:
		r := p.BudgetReleased
		if r.PassedOnFromTaskId != "" {
			return fmt.Sprintf("Delegated task %s, already ended, passed on %d tokens and %d micro-units that task %s did not spend", r.ChildTaskId, r.Tokens, r.CostMicros, r.PassedOnFromTaskId)
		}
		return fmt.Sprintf("Delegated task %s ended; %d tokens and %d micro-units it did not spend came back", r.ChildTaskId, r.Tokens, r.CostMicros)
	case *stewardv1.Event_BudgetRaised:
		r := p.BudgetRaised
		return withReason(fmt.Sprintf("%s raised the budget to %d tokens and %d micro-units (0: unchanged)", who, r.MaxTokens, r.MaxCostMicros), r.Reason)
	case *stewardv1.Event_InputReminded, *stewardv1.Event_InputEscalated:
		return inputLadderSummary(ev)
	case *stewardv1.Event_ApprovalReminded:
		return fmt.Sprintf("Approval %s has waited %s; its approvers were reminded", p.ApprovalReminded.ApprovalId, p.ApprovalReminded.Waited.AsDuration())
	case *stewardv1.Event_ApprovalEscalated:
		e := p.ApprovalEscalated
		return fmt.Sprintf("Approval %s has waited %s; it went to the backup, %s, who may decide it now", e.ApprovalId, e.Waited.AsDuration(), e.ToRef)
	}
	return ""
}

// responsibilitySummary tells the events about who may act and who
// accepts: credentials, artifacts and acceptance.
func responsibilitySummary(ev *stewardv1.Event) string {
	who := actorName(ev.Actor)
	switch p := ev.Payload.(type) {
	case *stewardv1.Event_CredentialIssued:
		ci := p.CredentialIssued
		if ci.RenewalReason != "" {
			until := "a later time"
			if c, err := task.DecodeCredential(ci.Credential); err == nil {
				until = c.ExpiresAt.AsTime().UTC().Format(time.RFC3339)
			}
			return withReason(fmt.Sprintf("%s renewed the task's credential until %s", who, until), ci.RenewalReason)
		}
		n := len(ci.Chain)
		if n == 0 {
			return "Governance issued the task's credential"
		}
		return fmt.Sprintf("Governance issued the task's credential, delegated through %d credentials", n)
	case *stewardv1.Event_CredentialRevoked:
		return withReason(fmt.Sprintf("%s revoked credential %s", who, p.CredentialRevoked.CredentialId), p.CredentialRevoked.Reason)
	case *stewardv1.Event_DeadlineExtended:
		x := p.DeadlineExtended
		return withReason(fmt.Sprintf("%s extended the deadline from %s to %s", who,
			x.Previous.AsTime().UTC().Format(time.RFC3339), x.Deadline.AsTime().UTC().Format(time.RFC3339)), x.Reason)
	case *stewardv1.Event_ArtifactSubmitted:
		a := p.ArtifactSubmitted.Artifact
		if a.GetSha256() == "" {
			// Hidden from a caller who may not read the task's content.
			return fmt.Sprintf("%s submitted artifact %s version %d (%s, %d bytes)", who, a.GetName(), a.GetVersion(), a.GetMediaType(), a.GetSizeBytes())
		}
		return fmt.Sprintf("%s submitted artifact %s version %d (%s, %d bytes, sha256 %.12s…)", who, a.GetName(), a.GetVersion(), a.GetMediaType(), a.GetSizeBytes(), a.GetSha256())
	case *stewardv1.Event_TaskProduced:
		pr := p.TaskProduced
		passed := 0
		for _, c := range pr.Checks {
			if c.Passed {
				passed++
			}
		}
		return fmt.Sprintf("%s marked the task produced (round %d); %d of %d acceptance checks passed", who, pr.Round, passed, len(pr.Checks))
	case *stewardv1.Event_TaskAccepted:
		return withReason(fmt.Sprintf("%s accepted the result of round %d", who, p.TaskAccepted.Round), p.TaskAccepted.Reason)
	case *stewardv1.Event_TaskReturned:
		return withReason(fmt.Sprintf("%s returned the result of round %d for revision", who, p.TaskReturned.Round), strings.Join(p.TaskReturned.Reasons, "; "))
	case *stewardv1.Event_FindingRecorded:
		// The auditor by name: the plane that recorded it says nothing.
		return withReason(findingSaid(ev.Actor.GetPrincipal(), p.FindingRecorded.Finding), p.FindingRecorded.Finding.GetDescription())
	}
	return ""
}

// findingSaid tells who found what, and about which action.
func findingSaid(who string, f *stewardv1.Finding) string {
	s := fmt.Sprintf("%s recorded finding %s, a %s", who, f.GetFindingId(), enumWords(f.GetKind().String(), "FINDING_KIND_"))
	if f.GetActionId() != "" {
		s += ", about action " + f.ActionId
	}
	return s
}

func withReason(s, reason string) string {
	if reason == "" {
		return s
	}
	return s + ": " + reason
}

func effectName(e stewardv1.EffectClass) string { return enumWords(e.String(), "EFFECT_CLASS_") }

func decisionName(d stewardv1.PolicyDecision) string {
	return enumWords(d.String(), "POLICY_DECISION_")
}

func enumWords(name, prefix string) string {
	return strings.ReplaceAll(strings.ToLower(strings.TrimPrefix(name, prefix)), "_", " ")
}

// shortRev shortens a bundle revision for a sentence.
func shortRev(rev string) string {
	if len(rev) > 19 {
		return rev[:19] + "…"
	}
	return rev
}

func riskName(t stewardv1.RiskTier) string { return enumWords(t.String(), "RISK_TIER_") }
