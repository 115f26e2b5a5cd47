package plandriver

import (
	"context"
	"fmt"

	"github.com/steward-run/steward/pkg/event"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/plan"
	"google.golang.org/protobuf/types/known/structpb"
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
// an answer (a person's resume) fails it. A question a suspension closed
// (the task's budget, its deadline, an approval overdue: nobody declined
// it) is asked again once the task runs, under an id naming the resume
// that lifted the suspension.
func (r *planPass) checkpoint(ctx context.Context, st *stewardv1.PlanStepState, c *stewardv1.CheckpointStep) (bool, error) {
	askID := r.attemptEventID(event.TypeTaskNeedsInput, "checkpoint", st.StepId, st.Attempts)
	for r.history.Has(askID) {
		q, err := r.closing(ctx, askID)
		switch {
		case err != nil || q.open:
			return false, err
		case q.askAgain != "":
			askID = r.attemptEventID(event.TypeTaskNeedsInput, "checkpoint", st.StepId, st.Attempts, q.askAgain)
		case q.answer == nil:
			return true, r.end(ctx, st, stewardv1.StepStatus_STEP_STATUS_FAILED, "its question was closed without an answer (the task was resumed)")
		default:
			return true, r.judgeResult(ctx, st, *q.answer, fmt.Sprintf("the answer %q", *q.answer), structpb.NewStringValue(*q.answer))
		}
	}
	return r.ask(ctx, st, c, askID)
}

// ask asks checkpoint st's question under askID, while the task runs; it
// reports whether it did: only a question asked moves the pass, else
// ready steps would wait on it.
func (r *planPass) ask(ctx context.Context, st *stewardv1.PlanStepState, c *stewardv1.CheckpointStep, askID string) (bool, error) {
	asked := false
	err := r.d.host.Write(ctx, r.taskID(), func(t *stewardv1.Task) (*stewardv1.Event, error) {
		asked = false
		if t.Status != stewardv1.TaskStatus_TASK_STATUS_RUNNING {
			return nil, nil // waiting on a person already, or on an approval: asked when it runs
		}
		asked = true
		return r.d.host.Event(r.meta(askID), &stewardv1.TaskNeedsInput{
			Reason:   fmt.Sprintf("plan step %s asks", st.StepId),
			Cause:    stewardv1.NeedsInputCause_NEEDS_INPUT_CAUSE_PLAN_CHECKPOINT,
			Question: c.Question,
			Choices:  c.Choices,
			AskRef:   c.AskRef,
		})
	})
	return asked, err
}

// closure is how a question was closed: open while it is not; else its
// answer, or none; or askAgain, the id of the resume that lifted a
// suspension which closed it.
type closure struct {
	open     bool
	answer   *string
	askAgain string
}

// closing reads how the question the event askID asked was closed: by
// the first of what follows it that closes a question — an answer
// (InputProvided); a resume, which closes it without one, unless it ends
// a pause (the task waits for the answer again) or lifts a suspension
// (which closed it: it is asked again); another question.
func (r *planPass) closing(ctx context.Context, askID string) (closure, error) {
	recs, err := r.d.cfg.Log.Read(ctx, r.taskID())
	if err != nil {
		return closure{}, err
	}
	asked, paused, suspended := false, false, false
	for _, rec := range recs {
		if !asked {
			asked = rec.Event.EventId == askID
			continue
		}
		switch pl := rec.Event.Payload.(type) {
		case *stewardv1.Event_InputProvided:
			return closure{answer: &pl.InputProvided.Answer}, nil
		case *stewardv1.Event_TaskPaused:
			paused = true
		case *stewardv1.Event_TaskSuspended:
			suspended = true
		case *stewardv1.Event_TaskResumed:
			switch {
			case paused:
				paused = false
			case suspended:
				return closure{askAgain: rec.Event.EventId}, nil
			default:
				return closure{}, nil
			}
		case *stewardv1.Event_TaskNeedsInput:
			return closure{}, nil
		}
	}
	return closure{open: true}, nil
}

// startCheckpoint starts checkpoint step st: it asks once started
// (checkpoint.go).
func (r *planPass) startCheckpoint(ctx context.Context, st *stewardv1.PlanStepState, _ *stewardv1.Step, _ map[string]plan.Outcome) error {
	return r.started(ctx, st, &stewardv1.PlanStepStarted{})
}

// followCheckpoint follows running checkpoint step st (checkpoint).
func (r *planPass) followCheckpoint(ctx context.Context, st *stewardv1.PlanStepState, step *stewardv1.Step) (bool, error) {
	return r.checkpoint(ctx, st, step.GetCheckpoint())
}
