package governance_test

import (
	"context"
	"testing"

	"github.com/steward-run/steward/pkg/eventlog"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/stewardtest"
	"github.com/steward-run/steward/services/governance"
)

// TestGovernanceLeavesANewerBuildsTaskToIt: a task started after an event
// of a type this build does not know (a newer control plane's) gets no
// credential from this governance plane, which cannot fold it; nor is the
// start set aside: it is redelivered, for a newer replica to take.
func TestGovernanceLeavesANewerBuildsTaskToIt(t *testing.T) {
	e := newHarness(t)
	ctx := context.Background()
	k := credContract([]string{"pay"}, nil)
	k.TaskId = "newer"
	created := stewardtest.AppendAfter(t, e.Log, eventlog.Head{}, "newer", &stewardv1.TaskCreated{Contract: k})
	newer := stewardtest.AppendNewer(t, e.Log, e.JS, created)
	started := stewardtest.AppendAfter(t, e.Log, newer, "newer", &stewardv1.TaskStarted{})
	e.start(t)
	stewardtest.LeftForNewer(t, e.Log, e.JS, governance.PlaneName, started.Sequence)
	if last, err := e.Log.LastSequence(ctx, "newer"); err != nil || last != started.Sequence {
		t.Errorf("the task's last event is %d (%v), want its start %d: this plane appended to a task it cannot fold", last, err, started.Sequence)
	}
}
