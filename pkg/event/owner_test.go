package event_test

import (
	"testing"

	"github.com/steward-run/steward/pkg/event"
)

// TestEveryTypeHasAnOwner: the ownership table covers every event type,
// each with one of the four planes.
func TestEveryTypeHasAnOwner(t *testing.T) {
	planes := map[string]bool{event.PlaneControl: true, event.PlaneGovernance: true, event.PlaneExecution: true, event.PlaneState: true}
	for _, typ := range event.Types() {
		if !planes[event.Owner(typ)] {
			t.Errorf("event type %s is owned by %q, not one of the planes", typ, event.Owner(typ))
		}
	}
}
