package control

import (
	"fmt"
	"strconv"

	"github.com/steward-run/steward/pkg/errs"
	"github.com/steward-run/steward/pkg/event"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/task"
)

// capStop is what a proposal past a task's action cap comes to: the task
// stops, waiting for input, and the proposal is refused.
type capStop struct {
	event   *stewardv1.Event // the TaskNeedsInput to append instead
	err     error            // building it failed
	refusal error            // what the proposer is told once it is appended
}

// capStop stops t, which has proposed as many actions as its cap allows
// (contract.limits.max_actions plus what resumes granted), when one more
// is proposed: the proposal is refused — as it always was — and the task
// waits for input with NEEDS_INPUT_CAUSE_ACTION_CAP, instead of running
// on while nothing it proposes can happen. The stop comes with the first
// proposal past the cap, not with the last one under it: an agent whose
// last allowed action was its last needed one finishes undisturbed. A
// person's ResumeTask lets it go on with max_actions more (the fold's
// Task.actions_granted); FailTask or CancelTask ends it.
//
// The stop's id derives from the cap in force and the task's head (the
// sequence of its last event), so every proposal refused at one cap on the
// same task — racing proposals, a client's retry, Steward's own retry of a
// failed action — records it once (once stopped, the task is not active
// and takes no proposal to stop it again), and the next cap, after a
// resume, stops it anew. The head matters for a task stopped at its cap,
// suspended while it waits, and resumed: it runs at the same cap, and a
// stop whose id was the first one's would be found on the log and append
// nothing, leaving the task running with every proposal refused.
func (p *Plane) capStop(t *stewardv1.Task, causationID, proposalID string) *capStop {
	taskID := t.Contract.GetTaskId()
	limit := task.MaxActions(t)
	reason := fmt.Sprintf("reached its cap of %d actions (contract.limits.max_actions): resume the task to let it propose %d more, or end it",
		limit, limit-int(t.ActionsGranted))
	if t.ActionsGranted > 0 {
		reason = fmt.Sprintf("reached its cap of %d actions (contract.limits.max_actions, with %d granted on resume): resume the task to let it propose %d more, or end it",
			limit, t.ActionsGranted, limit-int(t.ActionsGranted))
	}
	ev, err := p.event(event.Meta{
		ID:            event.ID(taskID, event.TypeTaskNeedsInput, "action-cap", strconv.Itoa(limit), strconv.FormatUint(t.LastSequence, 10)),
		TaskID:        taskID,
		Actor:         p.actor(stewardPrincipal),
		CausationID:   causationID,
		CorrelationID: proposalID,
	}, &stewardv1.TaskNeedsInput{Reason: reason, Cause: stewardv1.NeedsInputCause_NEEDS_INPUT_CAUSE_ACTION_CAP})
	return &capStop{event: ev, err: err, refusal: errs.New(errs.FailedPrecondition,
		"task %s reached its cap of %d actions (contract.limits.max_actions); it now waits for input: a person's ResumeTask lets it propose more", taskID, limit)}
}
