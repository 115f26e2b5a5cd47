package control_test

import (
	"context"
	"testing"
	"time"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/task"
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

	var retry string
	r.WaitTask(id, func(tk *stewardv1.Task) bool {
		st := task.FindStep(tk, "a")
		if len(st.ActionIds) < 2 {
			return false
		}
		retry = st.ActionIds[1]
		return true
	})
	recs, err := r.Log.Read(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	var failure, moved *stewardv1.Event
	for _, rec := range recs {
		switch {
		case rec.Event.GetActionOutcomeRecorded().GetActionId() == first.ActionId:
			failure = rec.Event
		case rec.Event.GetPlanStepStarted().GetActionId() == retry:
			moved = rec.Event
		}
	}
	if failure == nil || moved == nil || moved.CausationId != failure.EventId {
		t.Fatalf("the step moved to retry %s on %v, want on the failure %v", retry, moved, failure)
	}
}
