package governance_test

import (
	"context"
	"testing"
	"time"

	"github.com/steward-run/steward/pkg/event"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// TestGovernanceStampsItsEventsByItsClock checks that the events
// governance records carry the plane's clock's time, as the control and
// execution planes' do: a task's times (updated_at, which the state
// plane's watchdog judges quiet by; an action's outcome time) must not mix
// an injected clock with the wall clock.
func TestGovernanceStampsItsEventsByItsClock(t *testing.T) {
	e := newHarness(t)
	at := time.Date(2031, 3, 4, 5, 6, 7, 0, time.UTC)
	e.clock.Set(at)
	e.start(t)
	e.create(t, "clocked", "agent:a", credContract([]string{"search"}, nil))
	id := e.propose(t, "clocked", "p1", "search")
	e.waitStatus("clocked", id, stewardv1.ActionStatus_ACTION_STATUS_PERMITTED)
	recs, err := e.Log.Read(context.Background(), "clocked")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, r := range recs {
		if r.Event.GetActor().GetPlane() != event.PlaneGovernance {
			continue
		}
		n++
		if got := r.Event.Time.AsTime(); !got.Equal(at) {
			t.Errorf("%s at %s, want the plane's clock's %s", r.Event.Type, got, at)
		}
	}
	if n == 0 {
		t.Fatal("governance recorded nothing")
	}
}
