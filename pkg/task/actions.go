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
// — Waiting for its one more dispatch. Each step names the statuses it may
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
	var (
		id    string
		from  []stewardv1.ActionStatus
		to    stewardv1.ActionStatus
		check func(*stewardv1.Action) error
		apply func(*stewardv1.Action)
	)
	switch p := ev.Payload.(type) {
	case *stewardv1.Event_ActionProposed:
		a := p.ActionProposed.GetAction()
		switch {
		case a.GetActionId() == "":
			return nil, true, errs.New(errs.FailedPrecondition, "proposed action has no id")
		case FindAction(t, a.ActionId) != nil:
			return nil, true, errs.New(errs.FailedPrecondition, "action %s was already proposed", a.ActionId)
		case len(a.GetRequest()) > 0 && requestHash(a.Request) != a.GetRequestHash():
			// The inline request is what governance evaluates and
			// execution sends: it must be the request the hashes name.
			return nil, true, errs.New(errs.FailedPrecondition, "action %s carries a request that hashes to %s, not its request_hash %s", a.ActionId, requestHash(a.Request), a.GetRequestHash())
		case a.GetCompensates() != "":
			if t.Status != stewardv1.TaskStatus_TASK_STATUS_COMPENSATING {
				return nil, true, errs.New(errs.FailedPrecondition, "task %s is %s; compensations are proposed only while compensating", t.Contract.GetTaskId(), StatusName(t.Status))
			}
			if c := FindAction(t, a.Compensates); c == nil || c.Status != succeeded {
				return nil, true, errs.New(errs.FailedPrecondition, "action %s compensates %s, which did not succeed", a.ActionId, a.Compensates)
			}
		case !Active(t.Status):
			return nil, true, errs.New(errs.FailedPrecondition, "task %s is %s; only a running task takes new actions", t.Contract.GetTaskId(), StatusName(t.Status))
		case AtActionCap(t):
			return nil, true, errs.New(errs.FailedPrecondition, "task %s reached its cap of %d actions (contract.limits.max_actions)", t.Contract.GetTaskId(), MaxActions(t))
		}
		return func() {
			a := proto.CloneOf(a)
			a.Status, a.ProposedAt, a.UpdatedAt = proposed, ev.Time, ev.Time
			t.Actions = append(t.Actions, a)
			followLedger(t) // the action is under way from now
		}, true, nil

	case *stewardv1.Event_PolicyEvaluated:
		id = p.PolicyEvaluated.ActionId
		// A fresh evaluation after approval keeps the action approved; one
		// on revalidation keeps it revalidating.
		from = []stewardv1.ActionStatus{proposed, approved, revalidating}
		apply = func(a *stewardv1.Action) {
			a.Snapshot = p.PolicyEvaluated.Snapshot
			if a.Status == proposed {
				a.Status = evaluated
			}
		}

	case *stewardv1.Event_ActionDenied:
		// An action awaiting approval is denied when its task's
		// credential is revoked: the approval is closed undecided, as for
		// a withdrawn action, so nobody can decide it any more.
		// A revalidated action is denied with the cost of the calls it
		// already made.
		d := p.ActionDenied
		id, from, to = d.ActionId, []stewardv1.ActionStatus{proposed, evaluated, awaitingApproval, approved, revalidating}, denied
		check = func(a *stewardv1.Action) error {
			if d.CostMicros != 0 && a.Attempt == 0 {
				return fmt.Errorf("a denial carries a cost only for calls made, and none was")
			}
			return CheckSpend(t, 0, d.CostMicros)
		}
		apply = func(a *stewardv1.Action) {
			if a.Status == awaitingApproval && a.Approval != nil {
				a.Approval = proto.CloneOf(a.Approval)
				a.Approval.Withdrawn = true
			}
			a.Outcome = &stewardv1.Outcome{Status: denied, Reason: joinReasons(d.Reasons), FinishedAt: ev.Time, Attempt: a.Attempt, CostMicros: d.CostMicros}
			if mayHaveWorked(a) {
				to = unknown
				a.Outcome.Status, a.Outcome.FailureClass, a.Outcome.Reason = unknown, stewardv1.FailureClass_FAILURE_CLASS_UNKNOWN, stoppedAfterCalls("denied", a, a.Outcome.Reason)
			}
			clearWait(a)
			if d.CostMicros > 0 {
				spend(t, 0, d.CostMicros, "")
			}
		}

	case *stewardv1.Event_ApprovalRequested:
		ap := p.ApprovalRequested.GetApproval()
		id, from, to = ap.GetActionId(), []stewardv1.ActionStatus{evaluated, revalidating}, awaitingApproval
		check = func(a *stewardv1.Action) error {
			if ap.ActionHash != a.ActionHash {
				return fmt.Errorf("approval %s is for hash %s, the action's is %s", ap.ApprovalId, ap.ActionHash, a.ActionHash)
			}
			return nil
		}
		apply = func(a *stewardv1.Action) { a.Approval = proto.CloneOf(ap) }

	case *stewardv1.Event_ApprovalDecided:
		// One vote (approval.go): the action stays awaiting approval until
		// the vote that decides it.
		d := p.ApprovalDecided
		id, from = d.ActionId, []stewardv1.ActionStatus{awaitingApproval}
		check = func(a *stewardv1.Action) error {
			switch {
			case a.Approval.GetApprovalId() != d.ApprovalId:
				return fmt.Errorf("approval %s is not the action's open approval", d.ApprovalId)
			case d.ActionHash != a.ActionHash:
				return fmt.Errorf("the decision is for hash %s, the action's is %s", d.ActionHash, a.ActionHash)
			case d.Decision != stewardv1.ApprovalDecision_APPROVAL_DECISION_APPROVE && d.Decision != stewardv1.ApprovalDecision_APPROVAL_DECISION_REJECT:
				return fmt.Errorf("decision %v is neither approve nor reject", d.Decision)
			case VoteOf(a.Approval, d.DecidedBy) != nil:
				return fmt.Errorf("%s has voted on approval %s already; each approver votes once", d.DecidedBy, d.ApprovalId)
			}
			return nil
		}
		apply = func(a *stewardv1.Action) {
			a.Approval = proto.CloneOf(a.Approval)
			if !CastVote(a.Approval, d, ev.Time) {
				return // more approvals to come
			}
			to = approved
			if d.Decision != stewardv1.ApprovalDecision_APPROVAL_DECISION_APPROVE {
				to = rejected
			}
			if to == rejected {
				a.Outcome = &stewardv1.Outcome{Status: rejected, Reason: "rejected by " + d.DecidedBy + orEmpty(": ", d.Comment), FinishedAt: ev.Time}
				if mayHaveWorked(a) {
					to = unknown
					a.Outcome.Status, a.Outcome.FailureClass, a.Outcome.Attempt = unknown, stewardv1.FailureClass_FAILURE_CLASS_UNKNOWN, a.Attempt
					a.Outcome.Reason = stoppedAfterCalls("rejected", a, a.Outcome.Reason)
				}
			}
		}

	case *stewardv1.Event_ActionPermitted:
		pm, snap := p.ActionPermitted.GetPermit(), p.ActionPermitted.GetSnapshot()
		id, from, to = pm.GetActionId(), []stewardv1.ActionStatus{evaluated, approved, revalidating}, permitted
		if snap != nil {
			// Policy's evaluation and the permit at once: what
			// PolicyEvaluated then ActionPermitted would do, in one step.
			from = []stewardv1.ActionStatus{proposed, approved, revalidating}
		}
		check = func(a *stewardv1.Action) error {
			// The permit is checked against the action as the snapshot
			// leaves it.
			status, snapshot := a.Status, a.Snapshot
			if snap != nil {
				if err := checkCarriedSnapshot(a, pm, snap); err != nil {
					return err
				}
				snapshot = snap
				if status == proposed {
					status = evaluated
				}
			}
			switch {
			case pm.ActionHash != a.ActionHash || pm.RequestHash != a.RequestHash:
				return fmt.Errorf("permit %s does not match the action's hashes", pm.PermitId)
			case status == evaluated && snapshot.GetDecision() != stewardv1.PolicyDecision_POLICY_DECISION_ALLOW:
				return fmt.Errorf("permit %s without an allow or an approval", pm.PermitId)
			case status == revalidating && !approvalStands(snapshot, a.Approval):
				return fmt.Errorf("permit %s on revalidation without an allow or an approval of the roles now required", pm.PermitId)
			case a.Permit != nil && pm.PermitId == a.Permit.PermitId:
				return fmt.Errorf("permit %s was issued before; a new permit has a new id", pm.PermitId)
			case !MayPermit(t, a):
				// A paused task may hold a permit; the resume makes it
				// stale, so it is revalidated before it is claimed.
				return fmt.Errorf("task is %s", StatusName(t.Status))
			}
			return nil
		}
		apply = func(a *stewardv1.Action) {
			if snap != nil {
				a.Snapshot = snap
			}
			a.Permit, a.PermitStale = proto.CloneOf(pm), false
			// Kept for the execution plane, which verifies it before it
			// claims the permit; nil for an unsigned permit.
			a.SignedPermit = nil
			if sp := p.ActionPermitted.GetSigned(); sp != nil {
				a.SignedPermit = proto.CloneOf(sp)
			}
		}

	case *stewardv1.Event_ActionWithdrawn:
		w := p.ActionWithdrawn
		id, from, to = w.ActionId, []stewardv1.ActionStatus{proposed, evaluated, awaitingApproval, approved}, withdrawn
		apply = func(a *stewardv1.Action) {
			if a.Approval != nil && a.Approval.Decision == stewardv1.ApprovalDecision_APPROVAL_DECISION_UNSPECIFIED {
				a.Approval = proto.CloneOf(a.Approval)
				a.Approval.Withdrawn = true
			}
			a.Outcome = &stewardv1.Outcome{Status: withdrawn, Reason: "replaced by the edited action " + w.ReplacedBy, FinishedAt: ev.Time}
		}

	case *stewardv1.Event_ActionClaimed:
		c := p.ActionClaimed
		id, from, to = c.ActionId, []stewardv1.ActionStatus{permitted}, claimed
		check = func(a *stewardv1.Action) error {
			switch {
			case a.Permit.GetPermitId() != c.PermitId:
				return fmt.Errorf("claim of permit %s, the action's permit is %s", c.PermitId, a.Permit.GetPermitId())
			case !MayRun(t, a):
				return fmt.Errorf("task is %s", StatusName(t.Status))
			}
			return nil
		}
		apply = func(a *stewardv1.Action) { a.ClaimedBy = c.Worker }

	case *stewardv1.Event_ActionDispatched:
		d := p.ActionDispatched
		// The first dispatch of a permit may carry its claim: from
		// permitted, it is the claim and the dispatch in one append, and
		// of racing workers the first one's wins as a claim's does.
		id, from, to = d.ActionId, []stewardv1.ActionStatus{permitted, claimed, waiting}, dispatched
		check = func(a *stewardv1.Action) error {
			switch {
			case !MayRun(t, a):
				return fmt.Errorf("task is %s; this action is not dispatched for it", StatusName(t.Status))
			case d.Attempt != a.Attempt+1:
				return fmt.Errorf("dispatch attempt %d after %d", d.Attempt, a.Attempt)
			case a.Status == permitted && d.Attempt != 1:
				return fmt.Errorf("dispatch attempt %d straight from the permit; only the first attempt carries its claim, a later one is claimed first", d.Attempt)
			case a.Status == permitted && d.PermitId == "":
				return fmt.Errorf("a dispatch straight from the permit names the permit it claims")
			case a.Status == permitted && d.Worker == "":
				return fmt.Errorf("a dispatch straight from the permit names the worker that holds it")
			}
			if d.PermitId == "" {
				return nil // an old ledger's: one permit per action
			}
			switch {
			case d.PermitId != a.Permit.GetPermitId():
				return fmt.Errorf("dispatch under permit %s, the action's permit is %s", d.PermitId, a.Permit.GetPermitId())
			case d.PermitId == a.DispatchedPermitId:
				return fmt.Errorf("permit %s was dispatched under before; a permit is used for one dispatch", d.PermitId)
			case a.PermitStale:
				return fmt.Errorf("permit %s is stale: the task was resumed since it was issued", d.PermitId)
			}
			return nil
		}
		apply = func(a *stewardv1.Action) {
			a.Attempt = d.Attempt
			// An old ledger's dispatch names no permit: it was made under
			// the action's one permit.
			a.DispatchedPermitId = orDefault(d.PermitId, a.Permit.GetPermitId())
			if a.FirstDispatchedAt == nil {
				a.FirstDispatchedAt = ev.Time
			}
			if d.Worker != "" {
				a.ClaimedBy = d.Worker
			}
			clearWait(a)
		}

	case *stewardv1.Event_ActionWaiting:
		w := p.ActionWaiting
		// Waiting for a breaker before a dispatch, or backing off after
		// a transient failure of one (which is then not an outcome: the
		// outcome is what the last attempt comes to).
		id, from, to = w.ActionId, []stewardv1.ActionStatus{claimed, waiting, dispatched}, waiting
		check = func(a *stewardv1.Action) error {
			switch {
			case a.Status == dispatched && w.Kind != stewardv1.WaitKind_WAIT_KIND_RETRY:
				return fmt.Errorf("a dispatched action waits only to retry")
			case w.NextAttempt != a.Attempt+1:
				return fmt.Errorf("next attempt %d after %d", w.NextAttempt, a.Attempt)
			case w.Kind != stewardv1.WaitKind_WAIT_KIND_RETRY && w.Kind != stewardv1.WaitKind_WAIT_KIND_BREAKER:
				return fmt.Errorf("wait kind %v is neither retry nor breaker", w.Kind)
			}
			return nil
		}
		apply = func(a *stewardv1.Action) {
			a.WaitKind, a.WaitUntil, a.WaitReason = w.Kind, w.Until, w.Reason
		}

	case *stewardv1.Event_ActionSettled:
		st := p.ActionSettled
		id, from = st.ActionId, []stewardv1.ActionStatus{unknown}
		switch st.State {
		case stewardv1.SettleState_SETTLE_STATE_SUCCEEDED:
			to = succeeded
		case stewardv1.SettleState_SETTLE_STATE_FAILED:
			to = failed
		case stewardv1.SettleState_SETTLE_STATE_NOT_ACCEPTED:
			to = waiting
		}
		check = func(a *stewardv1.Action) error {
			switch {
			case to == stewardv1.ActionStatus_ACTION_STATUS_UNSPECIFIED:
				return fmt.Errorf("settle state %v is not succeeded, failed or not accepted", st.State)
			case to == waiting && a.Redispatched:
				return fmt.Errorf("not accepted a second time; the action was dispatched again once already")
			case st.SettledBy == "":
				return fmt.Errorf("a settlement names who settled it")
			}
			return nil
		}
		apply = func(a *stewardv1.Action) {
			a.SettledBy = st.SettledBy
			o := &stewardv1.Outcome{Status: to, Reason: "settled by " + st.SettledBy + orEmpty(": ", st.Reason), FinishedAt: ev.Time, Attempt: a.Attempt}
			switch to {
			case succeeded:
				o.ResultRef, o.ResultHash = st.ResultRef, st.ResultHash
			case failed:
				o.FailureClass = stewardv1.FailureClass_FAILURE_CLASS_DETERMINISTIC
			case waiting:
				// Nothing happened at the tool: dispatch once more, now,
				// with the same op_key and the same request.
				a.Redispatched = true
				a.WaitKind, a.WaitUntil, a.WaitReason = stewardv1.WaitKind_WAIT_KIND_RETRY, ev.Time, o.Reason+"; the tool has no record of the call"
			}
			a.Outcome = o
		}

	case *stewardv1.Event_ActionRevalidating:
		r := p.ActionRevalidating
		id, from, to = r.ActionId, []stewardv1.ActionStatus{permitted, claimed, waiting}, revalidating
		check = func(a *stewardv1.Action) error {
			switch {
			case r.PermitId == "" || r.PermitId != a.Permit.GetPermitId():
				return fmt.Errorf("revalidation of permit %q, the action's permit is %s", r.PermitId, a.Permit.GetPermitId())
			case r.Reason == stewardv1.RevalidationReason_REVALIDATION_REASON_UNSPECIFIED:
				return fmt.Errorf("a revalidation names its reason")
			}
			return nil
		}
		// Attempt, op_key, Redispatched and who claimed it stay: the next
		// dispatch, under a new permit, is the next attempt of the same
		// call.
		apply = func(a *stewardv1.Action) {
			clearWait(a)
			a.LastRevalidation, a.RevalidatedAt = r.Reason, ev.Time
		}

	case *stewardv1.Event_ActionHeartbeat:
		id, from = p.ActionHeartbeat.ActionId, []stewardv1.ActionStatus{dispatched}
		apply = func(a *stewardv1.Action) { a.LastHeartbeat = ev.Time }

	case *stewardv1.Event_ApprovalReminded:
		r := p.ApprovalReminded
		id, from = r.ActionId, []stewardv1.ActionStatus{awaitingApproval}
		check = func(a *stewardv1.Action) error {
			if a.Approval.GetApprovalId() != r.ApprovalId {
				return fmt.Errorf("approval %s is not the action's open approval", r.ApprovalId)
			}
			return nil
		}

	case *stewardv1.Event_ActionOutcomeRecorded:
		o := p.ActionOutcomeRecorded.GetOutcome()
		// A claimed or waiting action may also fail before it is
		// dispatched (its request or tool did not check out); only a
		// dispatched one can succeed or be unknown, or one waiting to
		// retry a try that may have done the work (its retry may not go
		// out: the tool may have forgotten the op_key), or claimed under a
		// new permit for that retry.
		id, from, to = p.ActionOutcomeRecorded.ActionId, []stewardv1.ActionStatus{claimed, waiting, dispatched}, o.GetStatus()
		outcomeCheck := func(a *stewardv1.Action) error {
			switch {
			case to != succeeded && to != failed && to != unknown:
				return fmt.Errorf("outcome status %v is not succeeded, failed or unknown", to)
			case len(o.GetResult()) > 0 && (to != succeeded || o.GetResultRef() != ""):
				return fmt.Errorf("an inline result belongs only to a succeeded outcome with no result_ref")
			case len(o.GetResult()) > 0 && requestHash(o.Result) != o.GetResultHash():
				return fmt.Errorf("the inline result hashes to %s, not its result_hash %s", requestHash(o.Result), o.GetResultHash())
			case a.Status != dispatched && to != failed && !(to == unknown && (a.Status == waiting || a.Status == claimed) && a.Attempt > 0):
				return fmt.Errorf("an action that was never dispatched cannot have %s", ActionStatusName(to))
			}
			return nil
		}
		check = func(a *stewardv1.Action) error {
			if err := outcomeCheck(a); err != nil {
				return err
			}
			return CheckSpend(t, 0, o.GetCostMicros())
		}
		apply = func(a *stewardv1.Action) {
			a.Outcome = proto.CloneOf(o)
			clearWait(a)
			// A call costs what it costs, whatever came of it.
			if o.GetCostMicros() > 0 {
				spend(t, 0, o.GetCostMicros(), "")
			}
		}

	default:
		return nil, false, nil
	}

	a := FindAction(t, id)
	if a == nil {
		return nil, true, errs.New(errs.FailedPrecondition, "%s: task %s has no action %s", ev.Type, t.Contract.GetTaskId(), id)
	}
	if !contains(from, a.Status) {
		return nil, true, errs.New(errs.FailedPrecondition, "%s: action %s is %s", ev.Type, id, ActionStatusName(a.Status))
	}
	if check != nil {
		if err := check(a); err != nil {
			return nil, true, errs.New(errs.FailedPrecondition, "%s: action %s: %v", ev.Type, id, err)
		}
	}
	return func() {
		// Replace the entry rather than mutate it: views handed out
		// earlier may share it.
		next := proto.CloneOf(a)
		if apply != nil {
			apply(next)
		}
		if to != stewardv1.ActionStatus_ACTION_STATUS_UNSPECIFIED {
			next.Status = to
		}
		next.UpdatedAt = ev.Time
		for i := range t.Actions {
			if t.Actions[i].ActionId == id {
				t.Actions[i] = next
			}
		}
		followLedger(t)
	}, true, nil
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
