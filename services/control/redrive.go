package control

import (
	"context"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/task"
)

// redrive reacts to a stall mark (the state plane's watchdog: a task with
// no event for longer than its bound) by doing again what this plane's
// reactions would have done had their event reached them: it starts a
// pending task, and, on a plane that takes actions, proposes the retries
// the task owes, the next compensation and the next plan steps. Each of
// those is the reaction itself, run with the mark as its cause, and is
// idempotent as it is: its ids derive from the task, so whatever was done
// already, or is done by a redelivery at the same time, is not done twice.
func (r *recovery) redrive(ctx context.Context, rec *stewardv1.EventRecord) error {
	t, _, err := r.tasks.LoadSince(ctx, rec.Event.TaskId, rec.Sequence)
	if err != nil {
		return err
	}
	pending := t.Status == stewardv1.TaskStatus_TASK_STATUS_PENDING
	if !pending && !(task.Working(t.Status) && r.takesActions() && drives(t)) {
		return nil // nothing of this plane's to do again
	}
	r.logger.Warn("re-driving a stalled task", "task", rec.Event.TaskId, "status", task.StatusName(t.Status),
		"reason", rec.Event.GetTaskStalled().GetReason())
	if pending {
		return r.start(ctx, rec)
	}
	for _, again := range []func(context.Context, *stewardv1.EventRecord) error{r.retryPending, r.amendDue, r.compensate, r.drivePlan} {
		if err := again(ctx, rec); err != nil {
			return err
		}
	}
	return nil
}

// drives reports whether this plane moves working task t on by itself: it
// has a plan (whose driver may also end it), or owes it a compensation or
// a retry or an amendment (task.ControlOwes: the rule by which the
// watchdog does not take such a task for its agent's turn).
func drives(t *stewardv1.Task) bool {
	return t.Plan != nil || task.ControlOwes(t)
}
