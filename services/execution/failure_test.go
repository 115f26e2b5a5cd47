package execution_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/steward-run/steward/pkg/errs"
	"github.com/steward-run/steward/pkg/event"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/stewardtest"
	"github.com/steward-run/steward/services/execution"
	"github.com/steward-run/steward/services/execution/breaker"
)

const (
	succeededS = stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED
	failedS    = stewardv1.ActionStatus_ACTION_STATUS_FAILED
	unknownS   = stewardv1.ActionStatus_ACTION_STATUS_UNKNOWN
)

func TestTransientFailuresAreRetriedWithTheSameKey(t *testing.T) {
	b := newHarness(t, breaker.Config{})
	ts := startTool(t, stewardtest.Fail(503), stewardtest.Fail(429), stewardtest.OK)
	b.register(ts, "charge", false, nil)
	taskID, actionID := b.permit("t-retry", "charge", "card-1")
	a := b.WaitAction(taskID, actionID, status(succeededS))
	if a.Attempt != 3 || a.Outcome.Attempt != 3 {
		t.Errorf("attempt %d (outcome %d), want 3", a.Attempt, a.Outcome.Attempt)
	}
	if got := ts.Calls(); got != 3 {
		t.Errorf("tool got %d calls, want 3", got)
	}
	if got := ts.Executions(a.OpKey); got != 1 {
		t.Errorf("work done %d times for the op_key, want 1", got)
	}
	if got := b.Count(taskID, event.TypeActionWaiting); got != 2 {
		t.Errorf("%d waits on the log, want 2", got)
	}
}

func TestRetriesStopAtMaxAttempts(t *testing.T) {
	b := newHarness(t, breaker.Config{})
	ts := startTool(t, stewardtest.Fail(503), stewardtest.Fail(503), stewardtest.Fail(503), stewardtest.OK)
	// Two, not the default of three: the tool's own figure is what stops it.
	b.register(ts, "charge", false, func(c *stewardv1.ToolContract) { c.RetryPolicy.MaxAttempts = 2 })
	taskID, actionID := b.permit("t-exhaust", "charge", "card-1")
	a := b.WaitAction(taskID, actionID, status(failedS))
	if a.Outcome.FailureClass != stewardv1.FailureClass_FAILURE_CLASS_TRANSIENT || a.Outcome.Attempt != 2 {
		t.Errorf("outcome %v", a.Outcome)
	}
	if got := ts.Calls(); got != 2 {
		t.Errorf("tool got %d calls, want 2 (max_attempts)", got)
	}
}

func TestDeterministicAndValidationFailuresAreNotRetried(t *testing.T) {
	b := newHarness(t, breaker.Config{})
	bad := startTool(t, stewardtest.Fail(400))
	b.register(bad, "lookup", false, nil)
	taskID, actionID := b.permit("t-determ", "lookup", "x")
	a := b.WaitAction(taskID, actionID, status(failedS))
	if a.Outcome.FailureClass != stewardv1.FailureClass_FAILURE_CLASS_DETERMINISTIC || !strings.Contains(a.Outcome.Reason, "scripted 400") {
		t.Errorf("outcome %v", a.Outcome)
	}
	if bad.Calls() != 1 {
		t.Errorf("tool got %d calls, want 1", bad.Calls())
	}

	wrong := startTool(t)
	b.register(wrong, "report", false, func(c *stewardv1.ToolContract) {
		c.ResultSchema = `{"type":"object","required":["count"]}`
	})
	taskID, actionID = b.permit("t-valid", "report", "x")
	a = b.WaitAction(taskID, actionID, status(failedS))
	if a.Outcome.FailureClass != stewardv1.FailureClass_FAILURE_CLASS_VALIDATION || !strings.Contains(a.Outcome.Reason, "result_schema") {
		t.Errorf("outcome %v", a.Outcome)
	}
	if wrong.Calls() != 1 {
		t.Errorf("tool got %d calls, want 1", wrong.Calls())
	}
}

func TestUnknownOutcomeIsSettledByTheStatusQuery(t *testing.T) {
	b := newHarness(t, breaker.Config{})
	ts := startTool(t, stewardtest.Late)
	b.register(ts, "charge", true, nil)
	taskID, actionID := b.permit("t-slow", "charge", "card-1")
	a := b.WaitAction(taskID, actionID, status(succeededS))
	if a.SettledBy != "status query" || a.Outcome.ResultRef == "" {
		t.Errorf("settled by %q, result %q", a.SettledBy, a.Outcome.ResultRef)
	}
	if got := ts.Executions(a.OpKey); got != 1 {
		t.Errorf("work done %d times, want 1", got)
	}
	if got := b.Count(taskID, event.TypeActionDispatched); got != 1 {
		t.Errorf("%d dispatches, want 1", got)
	}
}

func TestNotAcceptedIsDispatchedOnceMoreWithTheSameKey(t *testing.T) {
	b := newHarness(t, breaker.Config{})
	ts := startTool(t, stewardtest.Silent, stewardtest.OK)
	b.register(ts, "charge", true, nil)
	taskID, actionID := b.permit("t-drop", "charge", "card-1")
	a := b.WaitAction(taskID, actionID, status(succeededS))
	if !a.Redispatched || a.Attempt != 2 {
		t.Errorf("redispatched %v, attempt %d; want true, 2", a.Redispatched, a.Attempt)
	}
	if got := ts.Executions(a.OpKey); got != 1 {
		t.Errorf("work done %d times, want 1", got)
	}
}

func TestUnknownOutcomeWithoutStatusQueryWaitsForAPerson(t *testing.T) {
	b := newHarness(t, breaker.Config{})
	ts := startTool(t, stewardtest.Late)
	b.register(ts, "charge", false, writesOnce)
	taskID, actionID := b.permit("t-person", "charge", "card-1")
	b.WaitAction(taskID, actionID, status(unknownS))
	// Nothing settles it by itself: every reaction to the unknown outcome
	// has run, and none set a timer to come back to it.
	b.Settle(execution.PlaneName)
	if b.timer("*", execution.TimerReconcile) || b.timer("*", execution.TimerWait) {
		t.Fatal("a timer was set to come back to an unknown outcome that only a person can settle")
	}
	tk := b.WaitAction(taskID, actionID, func(*stewardv1.Action) bool { return true })
	if tk.Status != unknownS || tk.SettledBy != "" {
		t.Fatalf("%v, settled by %q without a person", tk.Status, tk.SettledBy)
	}
	ctx := context.Background()
	_, err := b.plane.Settle(ctx, "alice", &stewardv1.SettleActionRequest{TaskId: taskID, ActionId: actionID, State: stewardv1.SettleState_SETTLE_STATE_SUCCEEDED})
	if !errs.Is(err, errs.Invalid) || !strings.Contains(err.Error(), "reason") {
		t.Errorf("settle without a reason: %v", err)
	}
	result, _ := structpb.NewValue(map[string]any{"charged": true})
	a, err := b.plane.Settle(ctx, "alice", &stewardv1.SettleActionRequest{
		TaskId: taskID, ActionId: actionID, State: stewardv1.SettleState_SETTLE_STATE_SUCCEEDED, Result: result, Reason: "the bank statement shows the charge",
	})
	if err != nil {
		t.Fatal(err)
	}
	if a.Status != succeededS || a.SettledBy != "alice" || !strings.Contains(a.Outcome.Reason, "bank statement") {
		t.Errorf("settled action: %v by %q: %q", a.Status, a.SettledBy, a.Outcome.GetReason())
	}
	if _, err := b.plane.Settle(ctx, "bob", &stewardv1.SettleActionRequest{TaskId: taskID, ActionId: "nope", State: stewardv1.SettleState_SETTLE_STATE_FAILED, Reason: "x"}); !errs.Is(err, errs.NotFound) {
		t.Errorf("settle of a missing action: %v", err)
	}
	if got := ts.Executions(a.OpKey); got != 1 {
		t.Errorf("work done %d times, want 1", got)
	}
}

// TestRestartDuringBackoffKeepsTheRetry stops the plane while an action
// waits to retry, on either side of the moment its timer is set: the wait
// is recorded first, and the timer set by the reaction to that event, a
// moment later.
func TestRestartDuringBackoffKeepsTheRetry(t *testing.T) {
	t.Run("timer set before the stop", restartWithTheTimerSet)
	t.Run("stopped before the timer is set", restartBeforeTheTimerIsSet)
}

// restartWithTheTimerSet: the timer fires while nothing runs, and the
// restarted plane makes the retry.
func restartWithTheTimerSet(t *testing.T) {
	b := newHarness(t, breaker.Config{})
	ts := startTool(t, stewardtest.Fail(503), stewardtest.OK)
	b.register(ts, "charge", false, func(c *stewardv1.ToolContract) {
		c.RetryPolicy.InitialBackoff.Seconds, c.RetryPolicy.MaxBackoff.Seconds = 2, 2
	})
	taskID, actionID := b.permit("t-restart", "charge", "card-1")
	b.WaitAction(taskID, actionID, status(stewardv1.ActionStatus_ACTION_STATUS_WAITING))
	// The wait on the log is not yet its timer: a plane stopped in
	// between sets it only once restarted, and nothing could fire below.
	stewardtest.Eventually(t, 30*time.Second, func() (bool, string) {
		return b.timer("*", execution.TimerWait), "the retry's timer is not set"
	})
	b.plane.Stop()
	// The wait ends while nothing runs.
	stewardtest.Eventually(t, 30*time.Second, func() (bool, string) {
		return b.timer("fired", execution.TimerWait), "the retry's timer has not fired"
	})
	b.start()
	a := b.WaitAction(taskID, actionID, status(succeededS))
	if a.Attempt != 2 || ts.Calls() != 2 {
		t.Errorf("attempt %d, %d calls; want 2, 2", a.Attempt, ts.Calls())
	}
	if got := b.Count(taskID, event.TypeActionDispatched); got != 2 {
		t.Errorf("%d dispatches, want 2", got)
	}
}

// restartBeforeTheTimerIsSet: the log holds the wait and no timer, as a
// plane stopped between the two leaves it. The restarted plane sets the
// timer from the recorded wait, and the retry is made.
func restartBeforeTheTimerIsSet(t *testing.T) {
	b := newHarness(t, breaker.Config{})
	ts := startTool(t)
	b.register(ts, "charge", false, nil)
	b.plane.Stop()
	taskID, actionID := b.permit("t-unarmed", "charge", "card-1")
	b.Append(taskID, &stewardv1.ActionClaimed{ActionId: actionID, PermitId: "pm-" + actionID, Worker: "w1"},
		&stewardv1.ActionDispatched{ActionId: actionID, Attempt: 1, Worker: "w1"},
		&stewardv1.ActionWaiting{ActionId: actionID, Kind: stewardv1.WaitKind_WAIT_KIND_RETRY, NextAttempt: 2,
			Until: timestamppb.New(time.Now().Add(time.Second)), Reason: "attempt 1 of 3 failed: 503"})
	if b.timer("*", execution.TimerWait) {
		t.Fatal("a timer is set while no plane runs")
	}
	b.start()
	a := b.WaitAction(taskID, actionID, status(succeededS))
	if a.Attempt != 2 || ts.Calls() != 1 {
		t.Errorf("attempt %d, %d calls; want 2, 1", a.Attempt, ts.Calls())
	}
	if !b.timer("fired", execution.TimerWait) {
		t.Error("the retry was made without its timer")
	}
}

func TestFlappingServiceOpensTheBreakerAndNothingIsDropped(t *testing.T) {
	b := newHarness(t, breaker.Config{Window: 10 * time.Second, MinRequests: 2, FailureRate: 0.5, CoolDown: 2 * time.Second})
	ts := startTool(t, stewardtest.Fail(503), stewardtest.Fail(503), stewardtest.Fail(503), stewardtest.Fail(503))
	b.register(ts, "charge", false, func(c *stewardv1.ToolContract) {
		c.ServiceKey = "bank"
		c.RetryPolicy.MaxAttempts = 10
	})
	var ids [][2]string
	for _, id := range []string{"t-b1", "t-b2", "t-b3"} {
		taskID, actionID := b.permit(id, "charge", id)
		ids = append(ids, [2]string{taskID, actionID})
	}
	sawBreaker := false
	for _, id := range ids {
		a := b.WaitAction(id[0], id[1], status(succeededS))
		if got := ts.Executions(a.OpKey); got != 1 {
			t.Errorf("%s: work done %d times, want 1", id[1], got)
		}
		if b.Count(id[0], event.TypeActionWaiting) > 0 {
			sawBreaker = sawBreaker || waitedFor(t, b, id[0], stewardv1.WaitKind_WAIT_KIND_BREAKER)
		}
	}
	if !sawBreaker {
		t.Error("no action waited for the breaker")
	}
	changes, err := b.Log.ReadService(context.Background(), "", "bank")
	if err != nil {
		t.Fatal(err)
	}
	var path []string
	for _, r := range changes {
		path = append(path, r.Event.GetBreakerChanged().To.String())
	}
	joined := strings.Join(path, " ")
	if !strings.Contains(joined, "BREAKER_STATE_OPEN") || !strings.HasSuffix(joined, "BREAKER_STATE_CLOSED") {
		t.Errorf("breaker changes %v: want it to open and end closed", path)
	}
}

func waitedFor(t *testing.T, b *harness, taskID string, kind stewardv1.WaitKind) bool {
	recs, err := b.Log.Read(context.Background(), taskID)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		if w := r.Event.GetActionWaiting(); w != nil && w.Kind == kind {
			return true
		}
	}
	return false
}

// TestASilentWorkersCallIsTakenOverAfterItsLease leaves a dispatch of a
// worker that died mid-call on the log. A live worker, under another name,
// leaves it alone while the dead one's lease lasts; then it records the
// outcome as unknown, naming the silent worker, and the status query
// settles it. The call is never made again blind.
//
// The dead worker's dispatch may have followed its claim, or carried it
// (straight from the permit): either is taken over the same way.
func TestASilentWorkersCallIsTakenOverAfterItsLease(t *testing.T) {
	for _, c := range []struct {
		name string
		left func(actionID string) []event.Payload
	}{
		{"claimed, then dispatched", func(actionID string) []event.Payload {
			return []event.Payload{&stewardv1.ActionClaimed{ActionId: actionID, PermitId: "pm-" + actionID, Worker: "dead"},
				&stewardv1.ActionDispatched{ActionId: actionID, Attempt: 1, Worker: "dead"}}
		}},
		{"dispatched straight from the permit", func(actionID string) []event.Payload {
			return []event.Payload{&stewardv1.ActionDispatched{ActionId: actionID, Attempt: 1, Worker: "dead", PermitId: "pm-" + actionID}}
		}},
	} {
		t.Run(c.name, func(t *testing.T) { silentWorkersCallIsTakenOver(t, c.left) })
	}
}

func silentWorkersCallIsTakenOver(t *testing.T, left func(actionID string) []event.Payload) {
	b := newHarness(t, breaker.Config{})
	ts := startTool(t)
	b.register(ts, "charge", true, nil)
	b.plane.Stop() // the dead worker's turn: nothing reacts
	taskID, actionID := b.permit("t-dead", "charge", "card-1")
	b.Append(taskID, left(actionID)...)
	b.start()
	a := b.WaitAction(taskID, actionID, status(succeededS))
	if a.ClaimedBy != "w1" || !a.Redispatched {
		t.Errorf("claimed by %q, redispatched %v; want w1, true", a.ClaimedBy, a.Redispatched)
	}
	if got := ts.Executions(a.OpKey); got != 1 {
		t.Errorf("work done %d times, want 1", got)
	}
	recs, err := b.Log.Read(context.Background(), taskID)
	if err != nil {
		t.Fatal(err)
	}
	var dispatched, unknown *stewardv1.Event
	for _, r := range recs {
		switch {
		case r.Event.GetActionDispatched().GetWorker() == "dead":
			dispatched = r.Event
		case r.Event.GetActionOutcomeRecorded().GetOutcome().GetStatus() == stewardv1.ActionStatus_ACTION_STATUS_UNKNOWN && unknown == nil:
			unknown = r.Event
		}
	}
	if unknown == nil {
		t.Fatal("no unknown outcome recorded for the silent worker's call")
	}
	if why := unknown.GetActionOutcomeRecorded().Outcome.Reason; !strings.Contains(why, "worker dead") {
		t.Errorf("unknown outcome says %q; want it to name the silent worker", why)
	}
	if held := unknown.Time.AsTime().Sub(dispatched.Time.AsTime()); held < b.cfg.Lease {
		t.Errorf("taken over %s after the dispatch, within the dead worker's lease of %s", held, b.cfg.Lease)
	}
}

// TestADeadWorkersClaimIsDispatchedByAnother: a worker that died between
// its claim and its dispatch record leaves a claim and nothing else. A
// worker under another name dispatches it once the lease has run out.
func TestADeadWorkersClaimIsDispatchedByAnother(t *testing.T) {
	b := newHarness(t, breaker.Config{})
	ts := startTool(t)
	b.register(ts, "charge", false, writesOnce)
	b.plane.Stop()
	taskID, actionID := b.permit("t-claimed", "charge", "card-1")
	b.Append(taskID, &stewardv1.ActionClaimed{ActionId: actionID, PermitId: "pm-" + actionID, Worker: "gone"})
	b.start()
	a := b.WaitAction(taskID, actionID, status(succeededS))
	if a.ClaimedBy != "w1" || a.Attempt != 1 {
		t.Errorf("dispatched by %q as attempt %d; want w1, 1", a.ClaimedBy, a.Attempt)
	}
	if got := ts.Calls(); got != 1 {
		t.Errorf("tool got %d calls, want 1", got)
	}
	recs, err := b.Log.Read(context.Background(), taskID)
	if err != nil {
		t.Fatal(err)
	}
	var claimedAt, dispatchedAt time.Time
	for _, r := range recs {
		if r.Event.GetActionClaimed() != nil {
			claimedAt = r.Event.Time.AsTime()
		}
		if r.Event.GetActionDispatched() != nil {
			dispatchedAt = r.Event.Time.AsTime()
		}
	}
	if held := dispatchedAt.Sub(claimedAt); held < b.cfg.Lease {
		t.Errorf("dispatched %s after the claim, within the dead worker's lease of %s", held, b.cfg.Lease)
	}
}

// TestAnEndedTaskMakesNoRetryAndPaysForItsAttempts: a task cancelled while
// its action waits to retry makes no more calls; when the wait ends the
// action is closed, failed, and the attempts made are charged at the
// tool's price, so the task's budget counts every call it paid for.
func TestAnEndedTaskMakesNoRetryAndPaysForItsAttempts(t *testing.T) {
	b := newHarness(t, breaker.Config{})
	ts := startTool(t, stewardtest.Fail(503), stewardtest.OK)
	b.register(ts, "charge", false, func(c *stewardv1.ToolContract) {
		c.RetryPolicy.InitialBackoff.Seconds, c.RetryPolicy.MaxBackoff.Seconds = 1, 1
		c.CostMicrosPerCall = 250
	})
	taskID, actionID := b.permit("t-ended", "charge", "card-1")
	b.WaitAction(taskID, actionID, status(stewardv1.ActionStatus_ACTION_STATUS_WAITING))
	b.Append(taskID, &stewardv1.TaskCancelled{Reason: "no longer needed"})
	a := b.WaitAction(taskID, actionID, status(failedS))
	if !strings.Contains(a.Outcome.Reason, "not retried") || a.Outcome.CostMicros != 250 {
		t.Errorf("outcome %q costing %d, want not retried, charged the one call at 250", a.Outcome.Reason, a.Outcome.CostMicros)
	}
	if got := ts.Calls(); got != 1 {
		t.Errorf("tool got %d calls, want 1: an ended task retries nothing", got)
	}
}

// writesOnce makes a harness's tool one that does not honour its op_key: a
// call that may have arrived is never made again blind.
func writesOnce(c *stewardv1.ToolContract) { c.Idempotency = nil }
