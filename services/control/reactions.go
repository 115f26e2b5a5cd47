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
// Where several handlers answer one type the order is part of what they
// mean — each reads what those before it appended — so it is written once,
// as code, not left to where a registration sits in a list.
func (p *Plane) reactions() []eventlog.Reaction {
	// Compensation and the plan driver propose actions of their own: only
	// a plane that takes actions runs them.
	rc, dg := p.recovery, p.delegation
	var compensate, drivePlan, wakeParent eventlog.Handler
	if rc.takesActions() {
		compensate, drivePlan, wakeParent = rc.compensate, p.plans.Drive, p.plans.WakeParent
	}
	var (
		// A created task starts; one paused before it started goes back
		// to pending on resume and starts then. A task that runs again
		// gets the retries it owes before its plan moves.
		onCreated = inOrder(p.startIfPending)
		onResumed = inOrder(p.startIfPending, rc.retryPending, drivePlan)
		// An action's end: a failure for good is retried, stopped as a
		// loop or escalated first (recovery.go), so that the plan driver
		// finds the retry it follows; a sub-task's end gives back what
		// it did not spend (release) before the compensation and the
		// plans that wait on it move on.
		onActionEnd = inOrder(rc.recoverFrom, dg.release, compensate, drivePlan, wakeParent)
		onDenied    = inOrder(dg.release, compensate, drivePlan, wakeParent)
		// A sub-task's end gives back before its parent's plan moves on.
		onTaskEnd  = inOrder(dg.release, wakeParent)
		onProduced = inOrder(dg.release)
		// An answer, or a plan version judged to run again: the retries
		// held back meanwhile are owed before the driver looks for them.
		onRunsAgain = inOrder(rc.retryPending, drivePlan)
		// A release to a task that has ended goes on to its parent; one
		// to a parent moves its plan (its sub-task's step ends once the
		// parent has back what the sub-task did not spend).
		onReleased     = inOrder(dg.passOn, drivePlan)
		onCompensating = inOrder(compensate)
		onDecided      = inOrder(compensate, drivePlan)
		onPlanMoved    = inOrder(drivePlan)
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
		on[*stewardv1.ActionWithdrawn](onDecided),
		on[*stewardv1.PlanSubmitted](onPlanMoved),
		on[*stewardv1.PlanStepStarted](onPlanMoved),
		on[*stewardv1.PlanStepEnded](onPlanMoved),
		on[*stewardv1.TaskStalled](onStalled),
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
