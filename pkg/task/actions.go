package task

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"

	"google.golang.org/protobuf/proto"

	"github.com/steward-run/steward/pkg/errs"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// The action ledger: Proposed → Evaluated → (Denied | AwaitingApproval →
// Approved | Rejected) → Permitted → Claimed → Dispatched → Succeeded |
// Failed | Unknown. A permit's first dispatch may go straight from
// Permitted to Dispatched, carrying the claim (the worker that holds the
// action) in the same append. Between claim and outcome an action may be
// Waiting (a retry's backoff, an open breaker) and dispatched again, one
// attempt at a time; an Unknown one is settled to Succeeded, Failed or — "not accepted"
// — Waiting for its one more dispatch. An approval answered "a person
// executes it" leads to PersonExecuting instead of Approved, which only
// that person's settlement ends, Succeeded or Failed (amend.go). Each step
// names the statuses it may
// follow; anything else is refused, so a redelivered or out-of-order event
// cannot move an action backwards. A permit may carry the snapshot it was
// decided under (an allow with nothing to wait for): it records both steps
// at once, Proposed (or Revalidating) → Permitted, with the checks of each.
//
// A permit is used for one dispatch, and only while it is fresh: a later
// use (a retry, the re-dispatch after "not accepted", a dispatch after a
// resume, a permit past its expiry) goes through Revalidating, where
// governance evaluates the action again and issues a new permit, asks for
// approval, or denies it (revalidate.go in services/execution and
// services/governance; docs/permits.md).
const (
	proposed         = stewardv1.ActionStatus_ACTION_STATUS_PROPOSED
	evaluated        = stewardv1.ActionStatus_ACTION_STATUS_EVALUATED
	denied           = stewardv1.ActionStatus_ACTION_STATUS_DENIED
	awaitingApproval = stewardv1.ActionStatus_ACTION_STATUS_AWAITING_APPROVAL
	approved         = stewardv1.ActionStatus_ACTION_STATUS_APPROVED
	rejected         = stewardv1.ActionStatus_ACTION_STATUS_REJECTED
	permitted        = stewardv1.ActionStatus_ACTION_STATUS_PERMITTED
	claimed          = stewardv1.ActionStatus_ACTION_STATUS_CLAIMED
	dispatched       = stewardv1.ActionStatus_ACTION_STATUS_DISPATCHED
	succeeded        = stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED
	failed           = stewardv1.ActionStatus_ACTION_STATUS_FAILED
	unknown          = stewardv1.ActionStatus_ACTION_STATUS_UNKNOWN
	withdrawn        = stewardv1.ActionStatus_ACTION_STATUS_WITHDRAWN
	waiting          = stewardv1.ActionStatus_ACTION_STATUS_WAITING
	revalidating     = stewardv1.ActionStatus_ACTION_STATUS_REVALIDATING
	personExecuting  = stewardv1.ActionStatus_ACTION_STATUS_PERSON_EXECUTING
)

// requestHash is the hex SHA-256 of a canonical request, as pkg/action's
// RequestHash computes it (not imported: the fold stays free of the store).
func requestHash(canonical []byte) string {
	sum := sha256.Sum256(canonical)
	return hex.EncodeToString(sum[:])
}

// FindAction returns the action with id in t's ledger, or nil.
func FindAction(t *stewardv1.Task, id string) *stewardv1.Action {
	for _, a := range t.Actions {
		if a.ActionId == id {
			return a
		}
	}
	return nil
}

// actionStep checks an action event against t and returns the change to
// make; ok is false for events that are not about actions. Nothing changes
// until the caller runs commit, so a refused event leaves t as it was.
func actionStep(t *stewardv1.Task, ev *stewardv1.Event) (commit func(), ok bool, err error) {
	var tr *actionChange
	switch ev.Payload.(type) {
	case *stewardv1.Event_ActionProposed:
		commit, err = proposal(t, ev)
		return commit, true, err
	case *stewardv1.Event_ActionWithdrawn:
		tr = withdrawal(t, ev)
	case *stewardv1.Event_PolicyEvaluated:
		tr = evaluation(t, ev)
	case *stewardv1.Event_ActionDenied:
		tr = denial(t, ev)
	case *stewardv1.Event_ApprovalRequested:
		tr = approvalRequest(t, ev)
	case *stewardv1.Event_ApprovalDecided:
		tr = vote(t, ev)
	case *stewardv1.Event_ApprovalReminded:
		tr = reminder(t, ev)
	case *stewardv1.Event_ApprovalEscalated:
		tr = escalation(t, ev)
	case *stewardv1.Event_ActionPermitted:
		tr = permit(t, ev)
	case *stewardv1.Event_ActionRevalidating:
		tr = revalidation(t, ev)
	case *stewardv1.Event_ActionClaimed:
		tr = claim(t, ev)
	case *stewardv1.Event_ActionDispatched:
		tr = dispatch(t, ev)
	case *stewardv1.Event_ActionHeartbeat:
		tr = heartbeat(t, ev)
	case *stewardv1.Event_ActionWaiting:
		tr = wait(t, ev)
	case *stewardv1.Event_ActionOutcomeRecorded:
		tr = outcome(t, ev)
	case *stewardv1.Event_ActionSettled:
		tr = settlement(t, ev)
	default:
		return nil, false, nil
	}
	commit, err = tr.step(t, ev)
	return commit, true, err
}

// proposal adds a proposed action to t.
func proposal(t *stewardv1.Task, ev *stewardv1.Event) (commit func(), err error) {
	a := ev.GetActionProposed().GetAction()
	switch {
	case a.GetActionId() == "":
		return nil, errs.New(errs.FailedPrecondition, "proposed action has no id")
	case FindAction(t, a.ActionId) != nil:
		return nil, errs.New(errs.FailedPrecondition, "action %s was already proposed", a.ActionId)
	case len(a.GetRequest()) > 0 && requestHash(a.Request) != a.GetRequestHash():
		// The inline request is what governance evaluates and
		// execution sends: it must be the request the hashes name.
		return nil, errs.New(errs.FailedPrecondition, "action %s carries a request that hashes to %s, not its request_hash %s", a.ActionId, requestHash(a.Request), a.GetRequestHash())
	case a.GetMilestoneId() != "" && !KnownMilestone(t.Contract, a.MilestoneId):
		return nil, unknownMilestone(t, "milestone_id", a.MilestoneId)
	case a.GetDecisionId() != "" && FindDecision(t, a.DecisionId) == nil:
		return nil, errs.Field("decision_id", "task %s has recorded no decision %s: record it first (RecordDecision)", t.Contract.GetTaskId(), errs.Quote(a.DecisionId))
	case a.GetAmendmentOf() != "" && checkAmendment(t, a) != nil:
		return nil, errs.New(errs.FailedPrecondition, "%v", checkAmendment(t, a))
	case a.GetCompensates() != "":
		if t.Status != stewardv1.TaskStatus_TASK_STATUS_COMPENSATING {
			return nil, errs.New(errs.FailedPrecondition, "task %s is %s; compensations are proposed only while compensating", t.Contract.GetTaskId(), StatusName(t.Status))
		}
		if c := FindAction(t, a.Compensates); c == nil || c.Status != succeeded {
			return nil, errs.New(errs.FailedPrecondition, "action %s compensates %s, which did not succeed", a.ActionId, a.Compensates)
		}
	case !Active(t.Status):
		return nil, errs.New(errs.FailedPrecondition, "task %s is %s; only a running task takes new actions", t.Contract.GetTaskId(), StatusName(t.Status))
	case AtActionCap(t):
		return nil, errs.New(errs.FailedPrecondition, "task %s reached its cap of %d actions (contract.limits.max_actions)", t.Contract.GetTaskId(), MaxActions(t))
	case MilestoneAtCap(t, a.GetMilestoneId()):
		return nil, errs.New(errs.FailedPrecondition, "task %s: milestone %s reached its cap of %d actions and decisions", t.Contract.GetTaskId(), a.MilestoneId, MilestoneOf(t, a.MilestoneId).MaxActions)
	}
	return func() {
		// The event's action, copied to set its status: it shares the
		// event's sub-messages (its request, rationale, …), as actions
		// share an event's time, snapshot and permit, since the fold
		// changes none of an action's sub-messages in place.
		a := shallowAction(a)
		a.Status, a.ProposedAt, a.UpdatedAt = proposed, ev.Time, ev.Time
		a.ContractVersion = t.ContractVersion // a later revision leaves it under this one
		t.Actions = append(t.Actions, a)
		followLedger(t) // the action is under way from now
	}, nil
}

// withdrawal ends an action before it ran: replaced by its edit, or its
// plan step withdrawn.
func withdrawal(t *stewardv1.Task, ev *stewardv1.Event) *actionChange {
	w := ev.GetActionWithdrawn()
	tr := &actionChange{id: w.ActionId, from: []stewardv1.ActionStatus{proposed, evaluated, awaitingApproval, approved}, to: withdrawn}
	tr.apply = func(a *stewardv1.Action) {
		if a.Approval != nil && a.Approval.Decision == stewardv1.ApprovalDecision_APPROVAL_DECISION_UNSPECIFIED {
			a.Approval = proto.CloneOf(a.Approval)
			a.Approval.Withdrawn = true
		}
		reason := "replaced by the edited action " + w.ReplacedBy
		if w.ReplacedBy == "" {
			reason = orDefault(w.Reason, "withdrawn")
		}
		a.Outcome = &stewardv1.Outcome{Status: withdrawn, Reason: reason, FinishedAt: ev.Time}
	}
	return tr
}

// mayHaveWorked reports whether a call already made for a may have done
// the work: it was dispatched, and its tool is not a read, and what came
// of its last attempt is not known (a settled "not accepted" says it did
// nothing). Such an action stopped by a denial or a rejection on
// revalidation is unknown, not denied: the work may be done, and is
// settled — by the status query or a person — never guessed.
func mayHaveWorked(a *stewardv1.Action) bool {
	notAccepted := a.Redispatched && a.SettledBy != "" && a.Outcome.GetAttempt() == a.Attempt
	return a.Attempt > 0 && a.EffectClass != stewardv1.EffectClass_EFFECT_CLASS_READ && !notAccepted
}

// stoppedAfterCalls is the reason of an action stopped (denied, rejected)
// after calls that may have done the work.
func stoppedAfterCalls(how string, a *stewardv1.Action, why string) string {
	return fmt.Sprintf("%s before attempt %d (%s), but attempt %d may have done the work: its outcome is settled by the status query or SettleAction, and the call is not made again",
		how, a.Attempt+1, why, a.Attempt)
}

func clearWait(a *stewardv1.Action) {
	a.WaitKind, a.WaitUntil, a.WaitReason = stewardv1.WaitKind_WAIT_KIND_UNSPECIFIED, nil, ""
}

func contains(list []stewardv1.ActionStatus, s stewardv1.ActionStatus) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// ActionStatusName returns s in words, e.g. "awaiting approval".
func ActionStatusName(s stewardv1.ActionStatus) string {
	return enumWords(s.String(), "ACTION_STATUS_")
}

func joinReasons(rs []string) string {
	out := ""
	for i, r := range rs {
		if i > 0 {
			out += "; "
		}
		out += r
	}
	return out
}

func orEmpty(prefix, s string) string {
	if s == "" {
		return ""
	}
	return prefix + s
}
