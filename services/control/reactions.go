package control

import (
	"context"
	"slices"

	"github.com/steward-run/steward/pkg/event"
	"github.com/steward-run/steward/pkg/eventlog"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// reactions are the control plane's durable reactions to the log: one per
// event type, which runs that type's handlers in the order named here.
// One order is a contract: the plan driver looks after recovery has
// proposed the retry a failed step follows (retryPending, recoverFrom),
// so that the one delivery of the event both proposes the retry and
// moves the step on to it; looking first, the driver would find no retry
// and nothing would bring it back until the retry ended (pinned by
// reactions_test.go). The other handlers of a type commute — each acts
// on a case the others leave alone, as said below — and are written in
// the order a task's life goes, not as a contract.
func (p *Plane) reactions() []eventlog.Reaction {
	// Compensation and the plan driver propose actions of their own: only
	// a plane that takes actions runs them.
	rc, dg := p.recovery, p.delegation
	var compensate, drivePlan, wakeParent, observe, amend eventlog.Handler
	if rc.takesActions() {
		compensate, drivePlan, wakeParent = rc.compensate, p.plans.Drive, p.plans.WakeParent
		observe, amend = p.observer.observe, rc.amendDue
	}
	var (
		// A created task starts; one paused before it started goes back
		// to pending on resume and starts then (a pending task has no
		// actions and no plan: startIfPending commutes with the rest). A
		// task that runs again gets the retries it owes before its plan
		// moves (the contract).
		onCreated = inOrder(p.startIfPending)
		onResumed = inOrder(p.startIfPending, rc.retryPending, amend, drivePlan)
		// An action's end: a failure for good is retried, stopped as a
		// loop or escalated (recovery.go) before the plan driver looks
		// (the contract). The rest commute: recovery acts on an active
		// task, release on an ended sub-task (writing to its parent),
		// compensate on a compensating task, the driver on the plan of an
		// active task, wakeParent on an ended sub-task's parent's plan.
		// Where one's write makes the case of another (the driver fails
		// the task or starts its compensation, release gives back to a
		// waiting parent), the event it appends brings that one on
		// (onTaskEnd, onCompensating, onReleased), so the order here only
		// saves a delivery: a sub_task step waits for its release
		// whichever way (plandriver's givenBack). observe records the
		// decision behind a model call, which no other handler reads.
		onActionEnd = inOrder(rc.recoverFrom, dg.release, observe, compensate, drivePlan, wakeParent)
		onDenied    = inOrder(dg.release, compensate, drivePlan, wakeParent)
		// runEnded ticks the schedule of a run that ended (a queued firing
		// starts), taskEnded a candidate's rollout: each on its own chain.
		onTaskEnd  = inOrder(dg.release, wakeParent, p.schedules.runEnded, p.rollouts.taskEnded)
		onProduced = inOrder(dg.release, p.schedules.runEnded)
		// An answer, or a plan version judged to run again: the retries
		// held back meanwhile are proposed before the driver looks for
		// them (the contract).
		onRunsAgain = inOrder(rc.retryPending, amend, drivePlan)
		// A release to a task that has ended goes on to its parent
		// (passOn); one to a task still running moves its plan, whose
		// sub-task's step ends once the release is back. Each acts only
		// where the other does not: they commute.
		onReleased     = inOrder(dg.passOn, drivePlan)
		onCompensating = inOrder(compensate)
		// compensate acts only on a compensating task, in which the
		// driver moves no step, and amend on an active task's amended
		// actions, which no plan step has (governance refuses to amend
		// one): they commute. An amendment decided while the task is
		// stopped is proposed when it runs again (amend, above).
		onDecided   = inOrder(amend, compensate, drivePlan)
		onWithdrawn = inOrder(compensate, drivePlan)
		onPlanMoved = inOrder(drivePlan)
		// A stall mark: what the reactions above should have done, done
		// again (redrive.go).
		onStalled = inOrder(rc.redrive)
	)
	return slices.Concat(
		on[*stewardv1.TaskCreated](onCreated),
		on[*stewardv1.TaskResumed](onResumed),
		on[*stewardv1.ActionOutcomeRecorded](onActionEnd),
		on[*stewardv1.ActionSettled](onActionEnd),
		on[*stewardv1.ActionDenied](onDenied),
		on[*stewardv1.TaskCancelled](onTaskEnd),
		on[*stewardv1.TaskFailed](onTaskEnd),
		on[*stewardv1.TaskAccepted](onTaskEnd),
		on[*stewardv1.TaskProduced](onProduced),
		on[*stewardv1.InputProvided](onRunsAgain),
		on[*stewardv1.PlanEvaluated](onRunsAgain),
		on[*stewardv1.BudgetReleased](onReleased),
		on[*stewardv1.TaskCompensating](onCompensating),
		on[*stewardv1.ApprovalDecided](onDecided),
		on[*stewardv1.ActionWithdrawn](onWithdrawn),
		on[*stewardv1.PlanSubmitted](onPlanMoved),
		on[*stewardv1.PlanStepStarted](onPlanMoved),
		on[*stewardv1.PlanStepEnded](onPlanMoved),
		on[*stewardv1.TaskStalled](onStalled), p.schedules.planReactions(),
	)
}

// inOrder is the handlers of one event type in the order they run,
// leaving out those this plane does not run (nil).
func inOrder(hs ...eventlog.Handler) []eventlog.Handler {
	return slices.DeleteFunc(hs, func(h eventlog.Handler) bool { return h == nil })
}

// on is the one reaction to P's events, which runs hs in order, or none
// when hs is empty, so that a type this plane does nothing with stays out
// of its consumer's filter. The first handler to fail stops the rest and
// its error redelivers the event, to all of them again: each is
// idempotent.
func on[P event.Payload](hs []eventlog.Handler) []eventlog.Reaction {
	if len(hs) == 0 {
		return nil
	}
	return []eventlog.Reaction{eventlog.OnRecord[P](func(ctx context.Context, rec *stewardv1.EventRecord) error {
		for _, h := range hs {
			if err := h(ctx, rec); err != nil {
				return err
			}
		}
		return nil
	})}
}
