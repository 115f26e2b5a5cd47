package task_test

import (
	"testing"

	"github.com/steward-run/steward/pkg/errs"
	"github.com/steward-run/steward/pkg/event"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// permittedAction is dispatchedAction("a1") up to its permit pa1.
func permittedAction() []event.Payload { return dispatchedAction("a1")[:3] }

// TestFirstDispatchCarriesTheClaim: a permit's first dispatch may go
// straight from permitted, naming the permit; the worker it names holds
// the action as a claim's would, and the lease runs from it.
func TestFirstDispatchCarriesTheClaim(t *testing.T) {
	tk, err := fold(t, permittedAction(), one(dispatchUnder("pa1", 1)))
	if err != nil {
		t.Fatal(err)
	}
	a := tk.Actions[0]
	if a.Status != stewardv1.ActionStatus_ACTION_STATUS_DISPATCHED || a.Attempt != 1 || a.ClaimedBy != "w1" ||
		a.DispatchedPermitId != "pa1" || a.FirstDispatchedAt == nil || a.UpdatedAt == nil {
		t.Fatalf("action %v; want dispatched as attempt 1 under pa1, held by w1", a)
	}
	// It is the claim: no claim follows, and a second worker's dispatch of
	// the same attempt is refused, as a second claim is.
	for name, next := range map[string]event.Payload{
		"a claim after it":            &stewardv1.ActionClaimed{ActionId: "a1", PermitId: "pa1", Worker: "w2"},
		"another worker's dispatch":   &stewardv1.ActionDispatched{ActionId: "a1", Attempt: 1, Worker: "w2", PermitId: "pa1"},
		"a dispatch of the next turn": &stewardv1.ActionDispatched{ActionId: "a1", Attempt: 2, Worker: "w2", PermitId: "pa1"},
	} {
		if _, err := fold(t, permittedAction(), one(dispatchUnder("pa1", 1), next)); !errs.Is(err, errs.FailedPrecondition) {
			t.Errorf("%s: %v, want refused", name, err)
		}
	}
	// What follows is what follows any dispatch.
	if _, err := fold(t, permittedAction(), one(dispatchUnder("pa1", 1),
		&stewardv1.ActionHeartbeat{ActionId: "a1", Attempt: 1, Beat: 1},
		&stewardv1.ActionOutcomeRecorded{ActionId: "a1", Outcome: &stewardv1.Outcome{Status: stewardv1.ActionStatus_ACTION_STATUS_UNKNOWN, Attempt: 1}},
	)); err != nil {
		t.Fatalf("heartbeat and unknown outcome after a dispatch from the permit: %v", err)
	}
}

// TestDispatchFromThePermitIsRefusedUnlessItIsTheClaim: only the first
// attempt, only under the action's current permit, named, and only by a
// named worker, may skip the claim.
func TestDispatchFromThePermitIsRefusedUnlessItIsTheClaim(t *testing.T) {
	tests := []struct {
		name  string
		steps [][]event.Payload
	}{
		{"another permit", [][]event.Payload{permittedAction(), one(dispatchUnder("p-other", 1))}},
		{"no permit named", [][]event.Payload{permittedAction(), one(dispatchUnder("", 1))}},
		{"no worker named", [][]event.Payload{permittedAction(), one(&stewardv1.ActionDispatched{ActionId: "a1", Attempt: 1, PermitId: "pa1"})}},
		{"attempt 2", [][]event.Payload{permittedAction(), one(dispatchUnder("pa1", 2))}},
		// A retry's new permit is claimed first: the attempt after a
		// revalidation never skips the claim.
		{"attempt 2 under a new permit", [][]event.Payload{firstDispatch(), one(retryWait(), revalidating("pa1", retryAfter), snapshot("s2", allow), newPermit("p2"), dispatchUnder("p2", 2))}},
		{"a cancelled task", [][]event.Payload{permittedAction(), one(cancelled(), dispatchUnder("pa1", 1))}},
		{"a permit made stale by a resume", [][]event.Payload{permittedAction(), one(paused(), resumed(), dispatchUnder("pa1", 1))}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := fold(t, tt.steps...); !errs.Is(err, errs.FailedPrecondition) {
				t.Fatalf("err = %v, want refused", err)
			}
		})
	}
	// The same attempt under a new permit, claimed first, is taken.
	if _, err := fold(t, firstDispatch(), one(retryWait(), revalidating("pa1", retryAfter), snapshot("s2", allow), newPermit("p2"),
		&stewardv1.ActionClaimed{ActionId: "a1", PermitId: "p2", Worker: "w2"}, dispatchUnder("p2", 2))); err != nil {
		t.Fatalf("attempt 2 claimed under its new permit: %v", err)
	}
}
