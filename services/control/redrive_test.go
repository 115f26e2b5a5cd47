package control_test

import (
	"context"
	"testing"
	"time"

	"github.com/steward-run/steward/pkg/eventlog"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/stewardtest"
	"github.com/steward-run/steward/services/control"
)

// TestAStallMarkProposesTheRetryOwed: a task without a plan, whose agent
// its contract watches, under RECOVERY_MODE_RETRY, fails transiently while
// the plane's reaction to the failure is lost (acknowledged, nothing
// done): no retry is proposed. The stall mark — which the watchdog makes,
// since the task is owed a retry and so is not its agent's turn
// (task.ControlOwes) — has the plane propose it, once, caused by the mark.
func TestAStallMarkProposesTheRetryOwed(t *testing.T) {
	r := newHarness(t)
	req := validRequest("owed")
	req.Contract.AllowedTools = []string{"net"}
	req.Contract.RecoveryPolicy = &stewardv1.RecoveryPolicy{Mode: retryMode}
	req.Contract.Timers = &stewardv1.TaskTimers{AgentAskAfter: dur(time.Hour)}
	tk, _, err := r.ctl.CreateTask(context.Background(), "t", req)
	if err != nil {
		t.Fatal(err)
	}
	id := tk.Contract.TaskId
	r.running(id)
	a := r.propose(t, id, "p", "net", "api", map[string]any{"n": 1})
	r.settle()

	// The fault: the plane's consumer, in other hands, acknowledges the
	// failure and does nothing.
	r.ctl.Stop()
	sub, err := r.Log.React(context.Background(), control.PlaneName,
		eventlog.OnRecord[*stewardv1.ActionOutcomeRecorded](func(context.Context, *stewardv1.EventRecord) error { return nil }))
	if err != nil {
		t.Fatal(err)
	}
	r.run(t, id, a.ActionId, failed(transient, "HTTP 503: busy"), nil, time.Now())
	r.settle()
	sub.Stop()
	r.ctl = control.New(r.Log, r.Logger, r.config())
	r.start(t)
	r.settle()
	if retryOf(r.task(t, id), a.ActionId) != nil {
		t.Fatal("the fault did not strand the retry")
	}

	mark := stewardtest.Event(t, id, &stewardv1.TaskStalled{Reason: "no progress for 15m0s; no action is in flight"})
	r.AppendEvents(id, mark)
	r.settle()
	retry := retryOf(r.task(t, id), a.ActionId)
	if retry == nil {
		t.Fatal("the mark proposed no retry")
	}
	recs, err := r.Log.Read(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	for _, rec := range recs {
		if p := rec.Event.GetActionProposed(); p != nil && p.Action.ActionId == retry.ActionId && rec.Event.CausationId != mark.EventId {
			t.Errorf("the retry was caused by %s, want the mark %s", rec.Event.CausationId, mark.EventId)
		}
	}
}
