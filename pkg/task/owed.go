package task

import (
	"slices"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// What the control plane owes a task: the steps it takes by itself, with
// nobody else's event to wait for — a retry RECOVERY_MODE_RETRY proposes,
// the next compensation, the next steps of a plan that runs. The control
// plane proposes them (services/control); the stall watchdog never takes
// a task owed one for its agent's turn, so that a reaction that keeps
// failing is marked and re-driven (docs/stalls.md). One rule for both.

// DefaultRecoveryAttempts is how many proposals of one action
// RECOVERY_MODE_RETRY makes in all, the first included, when
// contract.recovery_policy.max_attempts does not say: the first proposal
// and two retries.
const DefaultRecoveryAttempts = 3

// ControlOwes reports whether the control plane owes t a step of its own:
// t compensates, a plan of it runs, a retry is owed (RetryOwed), or an
// amendment is (AmendmentOwed).
func ControlOwes(t *stewardv1.Task) bool {
	if t.Status == stewardv1.TaskStatus_TASK_STATUS_COMPENSATING || PlanRuns(t.Plan) {
		return true
	}
	return slices.ContainsFunc(t.Actions, func(a *stewardv1.Action) bool { return RetryOwed(t, a) || AmendmentOwed(t, a) })
}

// AmendmentOwed reports whether a, an action of t, was amended into an
// action the control plane has not proposed yet (amended_as names it, and
// t has none of that id).
func AmendmentOwed(t *stewardv1.Task, a *stewardv1.Action) bool {
	return a.AmendedAs != "" && FindAction(t, a.AmendedAs) == nil
}

// RetryOwed reports whether a, an action of t, is a failure that
// RECOVERY_MODE_RETRY proposes again now, and has not yet: retryable,
// with attempts left, not one the task's plan no longer asks for
// (PlanWithdrew), nor one it holds back (planHolds).
func RetryOwed(t *stewardv1.Task, a *stewardv1.Action) bool {
	return t.Contract.GetRecoveryPolicy().GetMode() == stewardv1.RecoveryMode_RECOVERY_MODE_RETRY &&
		retryable(a) && RecoveryAttempt(a) < maxRecoveryAttempts(t) && !retried(t, a) &&
		PlanWithdrew(t, a) == "" && // a retired plan step's action ran to its end; it is not run again
		!planHolds(t, a)
}

// retried reports whether a retry of a was proposed: every retry names
// what it retries (retry_of).
func retried(t *stewardv1.Task, a *stewardv1.Action) bool {
	return slices.ContainsFunc(t.Actions, func(x *stewardv1.Action) bool { return x.RetryOf == a.ActionId })
}

// retryable reports whether a failed in a way that the same request may
// not fail again: transiently (the tool answered 408, 429 or 5xx, or the
// call never reached it — the tool said it did not do the work — and the
// execution plane's own retries, under the tool's retry policy, are
// spent). A deterministic failure (another 4xx) would fail the same way
// again, and a validation failure (a result that does not check out) may
// have done the work: proposing either again would spend budget, and
// maybe an approver's time, for nothing, or do the work twice under a new
// op_key. A settled failure — a status query's or a person's word that
// the call failed — carries no class worth retrying on (the fold records
// it as deterministic), and is left to the agent too. Compensations are
// never retried: a compensating task starts nothing of its own.
func retryable(a *stewardv1.Action) bool {
	return a.Status == stewardv1.ActionStatus_ACTION_STATUS_FAILED && a.Compensates == "" && !a.Carried && a.SettledBy == "" &&
		a.Outcome.GetFailureClass() == stewardv1.FailureClass_FAILURE_CLASS_TRANSIENT
}

// RecoveryAttempt is which proposal of its original a is: 1 for one the
// agent proposed.
func RecoveryAttempt(a *stewardv1.Action) uint32 { return max(a.RecoveryAttempt, 1) }

// maxRecoveryAttempts is t's contract.recovery_policy.max_attempts, or
// its default.
func maxRecoveryAttempts(t *stewardv1.Task) uint32 {
	if n := t.Contract.GetRecoveryPolicy().GetMaxAttempts(); n > 0 {
		return n
	}
	return DefaultRecoveryAttempts
}

// planHolds reports whether t's plan holds back a retry of a, one of its
// steps' actions: while the version in force may not run yet (pending,
// or awaiting its approval), the retry waits for the judgement that lets
// it. And only the running attempt of a step is retried, under the
// definition it started with: a step a revision changed since is not
// retried on its old request — the failure ends it, and it starts afresh
// under its new definition — nor is the action of an attempt the step has
// left behind.
func planHolds(t *stewardv1.Task, a *stewardv1.Action) bool {
	if a.GetPlanStepId() == "" || t.Plan == nil {
		return false
	}
	st := FindStep(t, a.PlanStepId)
	return !PlanRuns(t.Plan) || st == nil || st.Status != stewardv1.StepStatus_STEP_STATUS_RUNNING ||
		st.Version < t.Plan.Version || !StepRuns(t, st, a)
}

// StepRuns reports whether a, or the action it retries (and so on), is
// one the running attempt of step st runs: an action step's action and
// its retries, a foreach's items'.
func StepRuns(t *stewardv1.Task, st *stewardv1.PlanStepState, a *stewardv1.Action) bool {
	for x := a; x != nil; x = FindAction(t, x.RetryOf) {
		if slices.Contains(st.ActionIds, x.ActionId) {
			return true
		}
	}
	return false
}
