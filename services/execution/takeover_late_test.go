package execution_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/stewardtest"
	"github.com/steward-run/steward/services/execution"
	"github.com/steward-run/steward/services/execution/breaker"
)

// TestALateWorkersRetryWaitIsNotDeadLettered: w1's call outlives
// its lease without a heartbeat reaching the log (cut off from the log, a
// long pause), and another worker records the call unknown, as hold does.
// docs/claims.md calls this the expected path: "when it comes back, the
// log refuses its late outcome". When the late answer is a transient
// failure, w1 records a retry wait instead of an outcome; the fold refuses
// it (the action is unknown), the error is FailedPrecondition, Permanent,
// and the ActionPermitted event is set aside on the dead-letter stream as
// if it were a bad event.
func TestALateWorkersRetryWaitIsNotDeadLettered(t *testing.T) {
	b := newHarness(t, breaker.Config{})
	ts := startTool(t, stewardtest.Answer{Code: http.StatusServiceUnavailable, Hold: stewardtest.HoldUntilRelease})
	b.register(ts, "charge", false, func(c *stewardv1.ToolContract) {
		c.Timeout = durationpb.New(time.Minute)
	})
	taskID, actionID := b.permit("t-late", "charge", "card")
	b.WaitAction(taskID, actionID, status(stewardv1.ActionStatus_ACTION_STATUS_DISPATCHED))
	stewardtest.Eventually(t, 30*time.Second, func() (bool, string) { return ts.Calls() == 1, "the call has not reached the tool" })
	// Another worker, finding w1's lease run out, records the call unknown.
	b.Append(taskID, &stewardv1.ActionOutcomeRecorded{ActionId: actionID, Outcome: &stewardv1.Outcome{
		Status: stewardv1.ActionStatus_ACTION_STATUS_UNKNOWN, FailureClass: stewardv1.FailureClass_FAILURE_CLASS_UNKNOWN,
		Reason: "worker w1 went silent for longer than its lease", Attempt: 1, FinishedAt: timestamppb.Now(),
	}})
	ts.Release()
	b.Settle(execution.PlaneName) // w1's late answer handled and its permit acknowledged
	dead, err := b.Log.DeadLetters(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range dead {
		t.Errorf("event %d set aside after an ordinary takeover race: %s", d.Sequence, d.Reason)
	}
}
