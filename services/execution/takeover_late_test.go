package execution_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
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
	b := newBed(t, breaker.Config{})
	release := make(chan struct{})
	entered := make(chan struct{}, 1)
	tool := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		entered <- struct{}{}
		<-release
		writeJSON(w, http.StatusServiceUnavailable, map[string]any{"message": "late 503"})
	}))
	t.Cleanup(tool.Close)
	b.register(&scriptedTool{Server: tool}, "charge", false, func(c *stewardv1.ToolContract) {
		c.Timeout = durationpb.New(time.Minute)
	})
	taskID, actionID := b.permit("t-late", "charge", "card")
	<-entered
	b.waitAction(taskID, actionID, status(stewardv1.ActionStatus_ACTION_STATUS_DISPATCHED))
	// Another worker, finding w1's lease run out, records the call unknown.
	b.append(taskID, &stewardv1.ActionOutcomeRecorded{ActionId: actionID, Outcome: &stewardv1.Outcome{
		Status: stewardv1.ActionStatus_ACTION_STATUS_UNKNOWN, FailureClass: stewardv1.FailureClass_FAILURE_CLASS_UNKNOWN,
		Reason: "worker w1 went silent for longer than its lease", Attempt: 1, FinishedAt: timestamppb.Now(),
	}})
	close(release)
	b.settle() // w1's late answer handled and its permit acknowledged
	st, err := b.bus.JS.Stream(context.Background(), "STEWARD_DEADLETTER")
	if err != nil {
		t.Logf("no dead-letter stream: %v", err)
		return
	}
	info, err := st.Info(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if info.State.Msgs > 0 {
		m, _ := st.GetMsg(context.Background(), info.State.FirstSeq)
		t.Fatalf("%d event(s) set aside after an ordinary takeover race; first: %s", info.State.Msgs, m.Header)
	}
}
