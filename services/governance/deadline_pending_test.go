package governance_test

import (
	"context"
	"testing"
	"time"

	"github.com/steward-run/steward/pkg/event"
	"github.com/steward-run/steward/pkg/eventlog"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/stewardtest"
	"github.com/steward-run/steward/services/governance"
)

// TestDeadlineCatchesATaskPausedBeforeItStarted: a task paused before it
// started is left alone at its deadline, as a paused task is; resumed, it
// goes back to pending, and when it then starts, past its deadline, it is
// suspended at once (docs/deadline.md: a paused task is suspended when it
// is resumed). It must not run past its deadline because its resume found
// it pending.
func TestDeadlineCatchesATaskPausedBeforeItStarted(t *testing.T) {
	e := newHarness(t)
	e.start(t, withoutSigner)
	k := credContract([]string{"search"}, nil)
	k.TaskId, k.AccountableOwnerRef, k.Deadline = "early", stewardtest.Principal, dueIn(time.Second)
	ev, err := event.New(event.Meta{ID: event.ID("early", event.TypeTaskCreated), TaskID: "early", Actor: &stewardv1.Actor{Principal: "agent:a", Plane: event.PlaneControl}}, &stewardv1.TaskCreated{Contract: k})
	if err == nil {
		_, err = e.Log.Append(context.Background(), eventlog.Head{}, ev)
	}
	if err != nil {
		t.Fatal(err)
	}
	e.Append("early", &stewardv1.TaskPaused{Reason: "not yet"})
	e.waitFired(t, 1)
	e.Append("early", &stewardv1.TaskResumed{Reason: "go"})
	e.Settle(governance.PlaneName) // the resume's reaction found the task pending
	e.Append("early", &stewardv1.TaskStarted{})
	e.waitDeadlineSuspended(t, "early", 1)
}
