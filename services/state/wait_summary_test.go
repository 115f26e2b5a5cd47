package state

import (
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
)

// TestTimelineSaysWhatAWaitIsFor: the timeline's line for a wait says
// what the action waits for — a retry, the breaker, the tool's limits.
func TestTimelineSaysWhatAWaitIsFor(t *testing.T) {
	at := timestamppb.New(time.Date(2026, 12, 4, 16, 0, 1, 500_000_000, time.UTC))
	for want, kind := range map[string]stewardv1.WaitKind{
		"Action act-1 retries: attempt 2 at 16:00:01.500":                     stewardv1.WaitKind_WAIT_KIND_RETRY,
		"Action act-1 waits for a circuit breaker: attempt 2 at 16:00:01.500": stewardv1.WaitKind_WAIT_KIND_BREAKER,
		"Action act-1 waits for its tool's limits: attempt 2 at 16:00:01.500": stewardv1.WaitKind_WAIT_KIND_LIMIT,
	} {
		w := &stewardv1.ActionWaiting{ActionId: "act-1", Kind: kind, NextAttempt: 2, Until: at}
		if got := failureSummary(&stewardv1.Event{Payload: &stewardv1.Event_ActionWaiting{ActionWaiting: w}}); got != want {
			t.Errorf("%s: got %q, want %q", kind, got, want)
		}
	}
}
