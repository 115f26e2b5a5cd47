package execution_test

import (
	"context"
	"testing"

	"github.com/steward-run/steward/pkg/event"
	"github.com/steward-run/steward/pkg/eventlog"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/stewardtest"
	"github.com/steward-run/steward/services/execution"
	"github.com/steward-run/steward/services/execution/breaker"
)

// TestExecutionLeavesANewerBuildsTaskToIt: a task resumed after an event
// of a type this build does not know is not this execution plane's to
// carry on: its reaction to the resume is redelivered, for a newer
// replica, and neither sets the resume aside nor appends to the task.
func TestExecutionLeavesANewerBuildsTaskToIt(t *testing.T) {
	b := newHarness(t, breaker.Config{})
	k := &stewardv1.TaskContract{TaskId: "newer", Intent: "i", DesiredOutcome: "o", RequesterRef: "user:a", AccountableOwnerRef: "user:a",
		RiskTier: stewardv1.RiskTier_RISK_TIER_LOW}
	var rec *stewardv1.EventRecord
	head := eventlog.Head{}
	for _, p := range []event.Payload{&stewardv1.TaskCreated{Contract: k}, &stewardv1.TaskStarted{}, &stewardv1.TaskPaused{}} {
		rec = stewardtest.AppendAfter(t, b.Log, head, "newer", p)
		head = eventlog.Head{Sequence: rec.Sequence, Hash: rec.Event.Hash}
	}
	newer := stewardtest.AppendNewer(t, b.Log, b.JS, rec)
	resumed := stewardtest.AppendAfter(t, b.Log, newer, "newer", &stewardv1.TaskResumed{})
	stewardtest.LeftForNewer(t, b.Log, b.JS, execution.PlaneName, resumed.Sequence)
	if last, err := b.Log.LastSequence(context.Background(), "newer"); err != nil || last != resumed.Sequence {
		t.Errorf("the task's last event is %d (%v), want its resume %d: this plane appended to a task it cannot fold", last, err, resumed.Sequence)
	}
}
