package task

import (
	"fmt"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// What came of a call: waits between attempts, the outcome of the last
// one, and the settlement of an unknown outcome (docs/retries.md).

// wait records a wait before the next attempt: a retry's backoff, an
// open breaker, or the tool's limits.
func wait(t *stewardv1.Task, ev *stewardv1.Event) *actionChange {
	w := ev.GetActionWaiting()
	// Waiting for a breaker before a dispatch, or backing off after
	// a transient failure of one (which is then not an outcome: the
	// outcome is what the last attempt comes to).
	tr := &actionChange{id: w.ActionId, from: []stewardv1.ActionStatus{claimed, waiting, dispatched}, to: waiting}
	tr.check = func(a *stewardv1.Action) error {
		switch {
		case a.Status == dispatched && w.Kind != stewardv1.WaitKind_WAIT_KIND_RETRY:
			return fmt.Errorf("a dispatched action waits only to retry")
		case w.NextAttempt != a.Attempt+1:
			return fmt.Errorf("next attempt %d after %d", w.NextAttempt, a.Attempt)
		case w.Kind != stewardv1.WaitKind_WAIT_KIND_RETRY && w.Kind != stewardv1.WaitKind_WAIT_KIND_BREAKER && w.Kind != stewardv1.WaitKind_WAIT_KIND_LIMIT:
			return fmt.Errorf("wait kind %v is not retry, breaker or limit", w.Kind)
		}
		return nil
	}
	tr.apply = func(a *stewardv1.Action) {
		a.WaitKind, a.WaitUntil, a.WaitReason = w.Kind, w.Until, w.Reason
	}
	return tr
}

// outcome records what came of the last attempt.
func outcome(t *stewardv1.Task, ev *stewardv1.Event) *actionChange {
	o := ev.GetActionOutcomeRecorded().GetOutcome()
	// A claimed or waiting action may also fail before it is
	// dispatched (its request or tool did not check out); only a
	// dispatched one can succeed or be unknown, or one waiting to
	// retry a try that may have done the work (its retry may not go
	// out: the tool may have forgotten the op_key), or claimed under a
	// new permit for that retry.
	tr := &actionChange{id: ev.GetActionOutcomeRecorded().ActionId, from: []stewardv1.ActionStatus{claimed, waiting, dispatched}, to: o.GetStatus()}
	outcomeCheck := func(a *stewardv1.Action) error {
		switch {
		case tr.to != succeeded && tr.to != failed && tr.to != unknown:
			return fmt.Errorf("outcome status %v is not succeeded, failed or unknown", tr.to)
		case len(o.GetResult()) > 0 && (tr.to != succeeded || o.GetResultRef() != ""):
			return fmt.Errorf("an inline result belongs only to a succeeded outcome with no result_ref")
		case len(o.GetResult()) > 0 && requestHash(o.Result) != o.GetResultHash():
			return fmt.Errorf("the inline result hashes to %s, not its result_hash %s", requestHash(o.Result), o.GetResultHash())
		case a.Status != dispatched && tr.to != failed && !(tr.to == unknown && (a.Status == waiting || a.Status == claimed) && a.Attempt > 0):
			return fmt.Errorf("an action that was never dispatched cannot have %s", ActionStatusName(tr.to))
		}
		return nil
	}
	tr.check = func(a *stewardv1.Action) error {
		if err := outcomeCheck(a); err != nil {
			return err
		}
		return CheckSpend(t, o.GetTokens(), o.GetCostMicros())
	}
	tr.apply = func(a *stewardv1.Action) {
		a.Outcome = o // the event's own, shared: the fold changes no outcome in place
		clearWait(a)
		// A call costs what it costs, whatever came of it, and its
		// milestone pays for it too; a model call's tokens likewise.
		if o.GetCostMicros() > 0 || o.GetTokens() > 0 {
			spend(t, o.GetTokens(), o.GetCostMicros(), a.MilestoneId)
		}
	}
	return tr
}

// settlement ends an unknown outcome as it was settled — succeeded,
// failed, or not accepted (one more dispatch) — or a person's execution
// as its executor settled it: done, or not.
func settlement(t *stewardv1.Task, ev *stewardv1.Event) *actionChange {
	st := ev.GetActionSettled()
	tr := &actionChange{id: st.ActionId, from: []stewardv1.ActionStatus{unknown, personExecuting}}
	switch st.State {
	case stewardv1.SettleState_SETTLE_STATE_SUCCEEDED:
		tr.to = succeeded
	case stewardv1.SettleState_SETTLE_STATE_FAILED:
		tr.to = failed
	case stewardv1.SettleState_SETTLE_STATE_NOT_ACCEPTED:
		tr.to = waiting
	}
	tr.check = func(a *stewardv1.Action) error {
		switch {
		case tr.to == stewardv1.ActionStatus_ACTION_STATUS_UNSPECIFIED:
			return fmt.Errorf("settle state %v is not succeeded, failed or not accepted", st.State)
		case tr.to == waiting && a.Redispatched:
			return fmt.Errorf("not accepted a second time; the action was dispatched again once already")
		case st.SettledBy == "":
			return fmt.Errorf("a settlement names who settled it")
		case a.Status == personExecuting:
			return checkPersonSettlement(a, st)
		}
		return nil
	}
	tr.apply = func(a *stewardv1.Action) {
		a.SettledBy = st.SettledBy
		o := &stewardv1.Outcome{Status: tr.to, Reason: "settled by " + st.SettledBy + orEmpty(": ", st.Reason), FinishedAt: ev.Time, Attempt: a.Attempt, Evidence: st.Evidence}
		if a.Status == personExecuting {
			o.Reason = "done by " + st.SettledBy + ", a person" + orEmpty(": ", st.Reason)
			if tr.to == failed {
				o.Reason = "not done by " + st.SettledBy + ", a person" + orEmpty(": ", st.Reason)
			}
		}
		switch tr.to {
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
	return tr
}
