package app

import (
	"slices"
	"testing"

	"github.com/steward-run/steward/pkg/natsperm"
)

// TestBackupOrderTakesTheEventsBeforeWhatTheyName pins the order of
// docs/backup.md: views first, events second, and every other stream
// Steward keeps after them, none left out.
func TestBackupOrderTakesTheEventsBeforeWhatTheyName(t *testing.T) {
	got := backupOrder()
	if len(got) < 3 || got[0] != "KV_STEWARD_STATE_VIEWS" || got[1] != "STEWARD_EVENTS" {
		t.Fatalf("backup order %v: want the view snapshots, then the events, then the rest", got)
	}
	for _, want := range []string{"KV_STEWARD_REQUESTS", "KV_STEWARD_RESULTS", "KV_STEWARD_POLICY", "KV_STEWARD_REQUEST_IDS", "STEWARD_DEADLETTER", "STEWARD_TIMERS_EXECUTION"} {
		if i := slices.Index(got, want); i < 2 {
			t.Errorf("%s is taken at %d of %v: want after the events", want, i, got)
		}
	}
	all := natsperm.Streams()
	if slices.Sort(all); !slices.Equal(all, slices.Sorted(slices.Values(got))) {
		t.Errorf("backup order %v is not every stream Steward keeps, %v", got, all)
	}
}
