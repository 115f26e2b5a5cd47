package execution_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/steward-run/steward/pkg/errs"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/stewardtest"
	"github.com/steward-run/steward/services/execution"
	"github.com/steward-run/steward/services/execution/breaker"
)

// TestConcurrentSettlementsAgreeOnWhatWasRecorded settles one unknown
// outcome from many callers at once, each with its own reason: one is
// recorded, and only the caller whose reason it is hears ok; every other
// is told what was recorded. An exact repeat is still ok; a repeat with
// another reason or result is already_exists, and another person's
// settlement failed_precondition, each naming the recorded reason.
func TestConcurrentSettlementsAgreeOnWhatWasRecorded(t *testing.T) {
	b := newHarness(t, breaker.Config{})
	ts := startTool(t, stewardtest.Late)
	b.register(ts, "charge", false, writesOnce)
	taskID, actionID := b.permit("t-settle-race", "charge", "card-1")
	b.WaitAction(taskID, actionID, status(unknownS))
	b.Settle(execution.PlaneName)

	ctx := context.Background()
	charged, _ := structpb.NewValue(map[string]any{"charged": true})
	settle := func(who, reason string, result *structpb.Value) (*stewardv1.Action, error) {
		return b.plane.Settle(ctx, who, &stewardv1.SettleActionRequest{
			TaskId: taskID, ActionId: actionID, State: stewardv1.SettleState_SETTLE_STATE_SUCCEEDED, Result: result, Reason: reason,
		})
	}
	const callers = 8
	var wg sync.WaitGroup
	errors := make([]error, callers)
	for i := range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errors[i] = settle("alice", fmt.Sprintf("statement line %d", i), charged)
		}()
	}
	wg.Wait()

	a := b.WaitAction(taskID, actionID, status(succeededS))
	recorded := strings.TrimPrefix(a.Outcome.GetReason(), "settled by alice: ")
	oks := 0
	for i, err := range errors {
		mine := fmt.Sprintf("statement line %d", i)
		switch {
		case err == nil:
			oks++
			if mine != recorded {
				t.Errorf("caller %d (%q) heard ok, but %q was recorded", i, mine, recorded)
			}
		case !errs.Is(err, errs.AlreadyExists) || !strings.Contains(err.Error(), recorded):
			t.Errorf("caller %d lost the race: %v; want already_exists naming %q", i, err, recorded)
		}
	}
	if oks != 1 {
		t.Errorf("%d callers heard ok, want 1", oks)
	}

	if got, err := settle("alice", recorded, charged); err != nil || got.Status != succeededS {
		t.Errorf("an exact repeat: %v, %v; want the action", got.GetStatus(), err)
	}
	other, _ := structpb.NewValue(map[string]any{"charged": false})
	for what, err := range map[string]error{
		"another result": func() error { _, err := settle("alice", recorded, other); return err }(),
		"no result":      func() error { _, err := settle("alice", recorded, nil); return err }(),
	} {
		if !errs.Is(err, errs.AlreadyExists) || !strings.Contains(err.Error(), "another result") {
			t.Errorf("a repeat with %s: %v; want already_exists", what, err)
		}
	}
	if _, err := settle("bob", recorded, charged); !errs.Is(err, errs.FailedPrecondition) || !strings.Contains(err.Error(), "already settled by alice") || !strings.Contains(err.Error(), recorded) {
		t.Errorf("another person's settlement: %v; want failed_precondition naming alice and the reason", err)
	}
	if _, err := b.plane.Settle(ctx, "alice", &stewardv1.SettleActionRequest{
		TaskId: taskID, ActionId: actionID, State: stewardv1.SettleState_SETTLE_STATE_FAILED, Reason: recorded,
	}); !errs.Is(err, errs.FailedPrecondition) || !strings.Contains(err.Error(), "as succeeded") {
		t.Errorf("a settlement of another state: %v; want failed_precondition naming the recorded one", err)
	}
}

// TestAStaleSettlementIsNotToldOk: alice reads attempt 1's unknown
// outcome; bob settles it not accepted and the action goes out again,
// unknown again at attempt 2. Alice's settlement of attempt 1 has the
// event id of bob's, already on the log: nothing is recorded, so she is
// told what was, not ok. A caller that read the action before it was
// unknown is told its status now, not the one it read.
func TestAStaleSettlementIsNotToldOk(t *testing.T) {
	b := newHarness(t, breaker.Config{})
	ts := startTool(t, stewardtest.Late, stewardtest.Late) // both attempts unknown
	b.register(ts, "charge", false, writesOnce)
	taskID, actionID := b.permit("t-settle-stale", "charge", "card-1")
	first := b.WaitAction(taskID, actionID, status(unknownS))
	b.Settle(execution.PlaneName)
	ctx := context.Background()
	settle := func(state stewardv1.SettleState, reason string) *stewardv1.SettleActionRequest {
		return &stewardv1.SettleActionRequest{TaskId: taskID, ActionId: actionID, State: state, Reason: reason}
	}
	// Read while it was dispatched, settled after it became unknown.
	before := proto.Clone(first).(*stewardv1.Action)
	before.Status = stewardv1.ActionStatus_ACTION_STATUS_DISPATCHED
	_, err := b.plane.SettleLoaded(ctx, "alice", settle(stewardv1.SettleState_SETTLE_STATE_FAILED, "declined"), before)
	if !errs.Is(err, errs.FailedPrecondition) || !strings.Contains(err.Error(), "became unknown") {
		t.Errorf("a settlement read while the action was dispatched: %v; want failed_precondition saying it is unknown now", err)
	}

	if _, err := b.plane.Settle(ctx, "bob", settle(stewardv1.SettleState_SETTLE_STATE_NOT_ACCEPTED, "the bank has no record")); err != nil {
		t.Fatal(err)
	}
	again := b.WaitAction(taskID, actionID, func(a *stewardv1.Action) bool {
		return a.Status == unknownS && a.Attempt > first.Attempt
	})

	_, err = b.plane.SettleLoaded(ctx, "alice", settle(stewardv1.SettleState_SETTLE_STATE_SUCCEEDED, "statement line 4"), first)
	if !errs.Is(err, errs.FailedPrecondition) || !strings.Contains(err.Error(), "already settled by bob") {
		t.Errorf("a settlement of attempt %d after bob's: %v; want failed_precondition naming bob's", first.Attempt, err)
	}
	if a := b.WaitAction(taskID, actionID, func(*stewardv1.Action) bool { return true }); a.Status != unknownS || a.Attempt != again.Attempt {
		t.Errorf("after it the action is %v at attempt %d; want still unknown at %d", a.Status, a.Attempt, again.Attempt)
	}
}
