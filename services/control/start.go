package control

import (
	"context"

	"github.com/steward-run/steward/pkg/event"
	"github.com/steward-run/steward/pkg/eventlog"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// reactions are the control plane's durable reactions to the log. The
// compensation driver runs only on a plane that takes actions: it
// proposes some of its own.
func (p *Plane) reactions() []eventlog.Reaction {
	r := []eventlog.Reaction{
		eventlog.OnRecord[*stewardv1.TaskCreated](p.startIfPending),
		// A task paused before it started goes back to pending on resume
		// and needs starting then.
		eventlog.OnRecord[*stewardv1.TaskResumed](p.startIfPending),
		// A failure for good: retry it, stop a loop, or escalate
		// (recovery.go); a task that runs again gets the retries it owes.
		eventlog.OnRecord[*stewardv1.ActionOutcomeRecorded](p.recoverFrom),
		eventlog.OnRecord[*stewardv1.ActionSettled](p.recoverFrom),
		eventlog.OnRecord[*stewardv1.TaskResumed](p.retryPending),
		eventlog.OnRecord[*stewardv1.InputProvided](p.retryPending),
		// A plan version judged to run again: retries its denied or
		// rejected predecessor held back are owed now.
		eventlog.OnRecord[*stewardv1.PlanEvaluated](p.retryPending),
		// A release to a task that has ended goes on to its parent.
		eventlog.OnRecord[*stewardv1.BudgetReleased](p.passOn),
		// A stall mark: what the reactions above and below should have
		// done, done again (redrive.go).
		eventlog.OnRecord[*stewardv1.TaskStalled](p.redrive),
	}
	// Every event that may end a task, or close an action still out when
	// it ended (an outcome, a settlement, a denial on revalidation with the
	// cost of the calls made): a sub-task's end gives back to its parent
	// what it did not spend. Each runs after the reactions above to its
	// type.
	r = append(r,
		eventlog.OnRecord[*stewardv1.TaskCancelled](p.release),
		eventlog.OnRecord[*stewardv1.TaskFailed](p.release),
		eventlog.OnRecord[*stewardv1.TaskAccepted](p.release),
		eventlog.OnRecord[*stewardv1.TaskProduced](p.release),
		eventlog.OnRecord[*stewardv1.ActionOutcomeRecorded](p.release),
		eventlog.OnRecord[*stewardv1.ActionSettled](p.release),
		eventlog.OnRecord[*stewardv1.ActionDenied](p.release),
	)
	if p.tools != nil && p.requests != nil {
		// Every event that starts a compensation or may end one.
		r = append(r,
			eventlog.OnRecord[*stewardv1.TaskCompensating](p.compensate),
			eventlog.OnRecord[*stewardv1.ActionOutcomeRecorded](p.compensate),
			eventlog.OnRecord[*stewardv1.ActionSettled](p.compensate),
			eventlog.OnRecord[*stewardv1.ActionDenied](p.compensate),
			eventlog.OnRecord[*stewardv1.ApprovalDecided](p.compensate),
			eventlog.OnRecord[*stewardv1.ActionWithdrawn](p.compensate),
		)
		// Every event that can move a plan (plan_driver.go), each after
		// the reactions above to its type: a failure's retry is proposed
		// before the driver looks for it.
		r = append(r,
			eventlog.OnRecord[*stewardv1.PlanSubmitted](p.drivePlan),
			eventlog.OnRecord[*stewardv1.PlanEvaluated](p.drivePlan),
			eventlog.OnRecord[*stewardv1.PlanStepStarted](p.drivePlan),
			eventlog.OnRecord[*stewardv1.PlanStepEnded](p.drivePlan),
			eventlog.OnRecord[*stewardv1.ApprovalDecided](p.drivePlan),
			eventlog.OnRecord[*stewardv1.ActionOutcomeRecorded](p.drivePlan),
			eventlog.OnRecord[*stewardv1.ActionSettled](p.drivePlan),
			eventlog.OnRecord[*stewardv1.ActionDenied](p.drivePlan),
			eventlog.OnRecord[*stewardv1.ActionWithdrawn](p.drivePlan),
			eventlog.OnRecord[*stewardv1.TaskResumed](p.drivePlan),
			eventlog.OnRecord[*stewardv1.InputProvided](p.drivePlan),
			// A sub-task's end moves its parent's plan once the parent has
			// back what the sub-task did not spend: its release, or, where
			// nothing was owed, its end or the settling of its last call.
			eventlog.OnRecord[*stewardv1.BudgetReleased](p.drivePlan),
			eventlog.OnRecord[*stewardv1.TaskAccepted](p.wakeParent),
			eventlog.OnRecord[*stewardv1.TaskFailed](p.wakeParent),
			eventlog.OnRecord[*stewardv1.TaskCancelled](p.wakeParent),
			eventlog.OnRecord[*stewardv1.ActionOutcomeRecorded](p.wakeParent),
			eventlog.OnRecord[*stewardv1.ActionSettled](p.wakeParent),
			eventlog.OnRecord[*stewardv1.ActionDenied](p.wakeParent),
		)
	}
	return r
}

// startIfPending starts a pending task. It is idempotent: the start event's
// id is derived from the task, so a redelivered cause finds the task
// already running (and does nothing) or, mid-retry, the same event stored.
func (p *Plane) startIfPending(ctx context.Context, rec *stewardv1.EventRecord) error {
	taskID := rec.Event.TaskId
	err := p.write(ctx, taskID, func(t *stewardv1.Task) (*stewardv1.Event, error) {
		if t.Status != stewardv1.TaskStatus_TASK_STATUS_PENDING {
			return nil, nil
		}
		return p.event(event.Meta{
			ID:            event.ID(taskID, event.TypeTaskStarted),
			TaskID:        taskID,
			Actor:         p.actor(stewardPrincipal),
			CausationID:   rec.Event.EventId,
			CorrelationID: rec.Event.CorrelationId,
		}, &stewardv1.TaskStarted{})
	})
	return err
}
