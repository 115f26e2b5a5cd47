package control

import (
	"context"
	"fmt"

	"google.golang.org/protobuf/types/known/structpb"

	"github.com/steward-run/steward/pkg/event"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/plan"
)

// Checkpoint steps (docs/plans.md): a step that runs no action and asks a
// person, as RequestInput does; the answer is its result. The step starts
// first (PlanStepStarted), then the driver asks (TaskNeedsInput, cause
// NEEDS_INPUT_CAUSE_PLAN_CHECKPOINT, under an id derived from the step
// and its attempt, not the plan version: a revision that keeps the step
// does not ask again), and the task waits for input; when it runs again,
// the answer to the question, if it was answered, ends the step.

// checkpoint moves running checkpoint step st on: it asks, once, while
// the task runs; once the question is closed, the answer ends the step —
// by its expect, with result the answer — and a question closed without
// an answer (a resume) fails it.
func (r *planPass) checkpoint(ctx context.Context, st *stewardv1.PlanStepState, c *stewardv1.CheckpointStep) (bool, error) {
	askID := r.attemptEventID(event.TypeTaskNeedsInput, "checkpoint", st.StepId, st.Attempts)
	if !r.history.Has(askID) {
		asked := false // only a question asked moves the pass: else ready steps would wait on it
		err := r.p.write(ctx, r.taskID(), func(t *stewardv1.Task) (*stewardv1.Event, error) {
			asked = false
			if t.Status != stewardv1.TaskStatus_TASK_STATUS_RUNNING {
				return nil, nil // waiting on a person already, or on an approval: asked when it runs
			}
			asked = true
			return r.p.event(r.meta(askID), &stewardv1.TaskNeedsInput{
				Reason:   fmt.Sprintf("plan step %s asks", st.StepId),
				Cause:    stewardv1.NeedsInputCause_NEEDS_INPUT_CAUSE_PLAN_CHECKPOINT,
				Question: c.Question,
				Choices:  c.Choices,
				AskRef:   c.AskRef,
			})
		})
		return asked, err
	}
	answer, closed, err := r.answerTo(ctx, askID)
	switch {
	case err != nil || !closed:
		return false, err
	case answer == nil:
		return true, r.end(ctx, st, stewardv1.StepStatus_STEP_STATUS_FAILED, "its question was closed without an answer (the task was resumed)")
	}
	outs, err := r.outcomes(ctx)
	if err != nil {
		return false, err
	}
	ok, err := plan.EvalExpect(ctx, r.t.Plan.Plan, st.StepId, plan.Bindings{Steps: outs, Result: *answer})
	switch {
	case err != nil:
		return true, r.end(ctx, st, stewardv1.StepStatus_STEP_STATUS_FAILED, "validation failure: "+err.Error())
	case !ok:
		return true, r.end(ctx, st, stewardv1.StepStatus_STEP_STATUS_FAILED, fmt.Sprintf("validation failure: the answer %q does not meet expect %s", *answer, r.definition(st.StepId).GetExpect()))
	}
	return true, r.endWith(ctx, st, stewardv1.StepStatus_STEP_STATUS_SUCCEEDED, "", structpb.NewStringValue(*answer))
}

// answerTo reads how the question the event askID asked was closed: by
// the first of what follows it that closes a question — an answer
// (InputProvided), or a resume (other than one ending a pause, which
// takes the task back to waiting for it) or another question, which close
// it without one (answer nil). closed is false while it is still open.
func (r *planPass) answerTo(ctx context.Context, askID string) (answer *string, closed bool, err error) {
	recs, err := r.p.log.Read(ctx, r.taskID())
	if err != nil {
		return nil, false, err
	}
	// held: paused since; its resume takes the task back to waiting for
	// the answer, and closes nothing.
	asked, held := false, false
	for _, rec := range recs {
		if !asked {
			asked = rec.Event.EventId == askID
			continue
		}
		switch pl := rec.Event.Payload.(type) {
		case *stewardv1.Event_InputProvided:
			return &pl.InputProvided.Answer, true, nil
		case *stewardv1.Event_TaskPaused:
			held = true
		case *stewardv1.Event_TaskResumed:
			if !held {
				return nil, true, nil
			}
			held = false
		case *stewardv1.Event_TaskNeedsInput:
			return nil, true, nil
		}
	}
	return nil, false, nil
}
