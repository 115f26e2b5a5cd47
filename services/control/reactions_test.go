package control_test

import (
	"context"
	"testing"
	"time"

	"github.com/steward-run/steward/pkg/event"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/rpc"
)

// TestOutcomeRecoversBeforeThePlanMoves: the reaction to an action's
// outcome recovers from a failure before it drives the plan, so the one
// delivery of the failure both proposes the retry and moves the step on
// to it. Were the driver to run first it would find no retry yet and
// wait, and nothing would bring it back until the retry itself ended.
func TestOutcomeRecoversBeforeThePlanMoves(t *testing.T) {
	r := newHarness(t)
	id := r.planTaskWith(t, "order", func(c *stewardv1.TaskContract) {
		c.RecoveryPolicy = &stewardv1.RecoveryPolicy{Mode: stewardv1.RecoveryMode_RECOVERY_MODE_RETRY}
	}, nil)
	r.runPlan(t, id, &stewardv1.Plan{Version: 1, Ending: stewardv1.PlanEnding_PLAN_ENDING_PRODUCE, Steps: []*stewardv1.Step{
		act("a", nil, "search", "index", nil),
	}})
	_, first := r.step(id, "a", stepRunning)
	r.run(t, id, first.ActionId, failed(stewardv1.FailureClass_FAILURE_CLASS_TRANSIENT, "503"), nil, time.Now())
	r.settle()
	retry := retryOf(r.task(t, id), first.ActionId)
	if retry == nil {
		t.Fatal("the failure was not retried")
	}
	if cause := r.movedOnTo(t, id, retry.ActionId); cause.GetActionOutcomeRecorded().GetActionId() != first.ActionId {
		t.Fatalf("the step moved to retry %s on %s, want on the failure of %s", retry.ActionId, describe(cause), first.ActionId)
	}
}

// TestRunningAgainRetriesBeforeThePlanMoves: a step's action fails
// transiently while its task may not run it again — paused, waiting for
// an answer, or under a denied plan version — so its retry is held back.
// When the task runs again (a resume, the answer, a version allowed), the
// one delivery of that event both proposes the retry and moves the step
// on to it. Were the driver to look first it would find no retry yet and
// wait, and nothing would bring it back until the retry itself ended.
func TestRunningAgainRetriesBeforeThePlanMoves(t *testing.T) {
	x := act("x", nil, "search", "x", nil)
	for _, tc := range []struct {
		name        string
		stop, start func(r *harness, t *testing.T, id string)
		by          string // the type of the event that runs the task again
	}{
		{"resumed", func(r *harness, t *testing.T, id string) {
			if _, err := r.ctl.PauseTask(context.Background(), rpc.Identity{Principal: "user:a"}, &stewardv1.PauseTaskRequest{TaskId: id}); err != nil {
				t.Fatal(err)
			}
		}, (*harness).resume, event.TypeTaskResumed},
		{"answered", func(r *harness, t *testing.T, id string) {
			if _, err := r.ctl.RequestInput(context.Background(), "agent", &stewardv1.RequestInputRequest{TaskId: id, Question: "Which?"}); err != nil {
				t.Fatal(err)
			}
		}, func(r *harness, t *testing.T, id string) {
			if _, err := r.ctl.ProvideInput(context.Background(), rpc.Identity{Principal: "user:a"}, &stewardv1.ProvideInputRequest{TaskId: id, Answer: "that"}); err != nil {
				t.Fatal(err)
			}
		}, event.TypeInputProvided},
		{"judged", func(r *harness, t *testing.T, id string) {
			r.deniedPlan(t, id, handBack(2, x, act("y", nil, "write", "doc", map[string]string{"text": "'y'"})))
		}, func(r *harness, t *testing.T, id string) {
			r.runPlan(t, id, handBack(3, x, act("z", nil, "search", "z", nil)))
		}, event.TypePlanEvaluated},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newHarness(t)
			id := r.retryingTask(t, "again-"+tc.name)
			r.runPlan(t, id, handBack(1, x))
			_, first := r.step(id, "x", stepRunning)
			r.dispatch(t, id, first.ActionId)
			tc.stop(r, t, id)
			r.finish(t, id, first.ActionId, failed(transient, "503"), nil, time.Now())
			r.settle()
			if retry := retryOf(r.task(t, id), first.ActionId); retry != nil {
				t.Fatalf("retry %s proposed while the task may not run it", retry.ActionId)
			}
			tc.start(r, t, id)
			r.settle()
			retry := retryOf(r.task(t, id), first.ActionId)
			if retry == nil {
				t.Fatal("the task runs again and owes its retry still")
			}
			if cause := r.movedOnTo(t, id, retry.ActionId); cause.GetType() != tc.by {
				t.Fatalf("step x moved on to retry %s on %s, want on the %s that ran the task again", retry.ActionId, describe(cause), tc.by)
			}
		})
	}
}

// movedOnTo is the event that moved a plan step on to action actionID —
// the cause of the step's start on it — or nil while none has.
func (r *harness) movedOnTo(t *testing.T, taskID, actionID string) *stewardv1.Event {
	t.Helper()
	recs, err := r.Log.Read(context.Background(), taskID)
	if err != nil {
		t.Fatal(err)
	}
	byID := map[string]*stewardv1.Event{}
	for _, rec := range recs {
		byID[rec.Event.EventId] = rec.Event
		if rec.Event.GetPlanStepStarted().GetActionId() == actionID {
			return byID[rec.Event.CausationId]
		}
	}
	return nil
}

// describe names an event by its type and id, or says there is none.
func describe(ev *stewardv1.Event) string {
	if ev == nil {
		return "nothing"
	}
	return ev.Type + " " + ev.EventId
}
