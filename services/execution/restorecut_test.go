package execution_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/steward-run/steward/pkg/backup"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/stewardtest"
	"github.com/steward-run/steward/services/execution"
	"github.com/steward-run/steward/services/execution/breaker"
)

// TestAfterARestoreAnActionProposedBeforeTheCutIsNeverSentBlind: a log
// as a restore leaves it. Action sent was permitted at the cut and the
// Steward the backup came from sent it after the cut (the test makes that
// call itself); action unsent was permitted at the cut and never sent.
// Neither has an outcome, and the restored log cannot tell them apart:
// each is recorded dispatched and unknown, with a reason naming the
// restore, without a call. The status query settles sent (the tool did
// it) with no second call, and says unsent was never accepted, which sends
// it once. Action fresh, proposed after the cut, and a read proposed
// before it, are sent at once, as always.
func TestAfterARestoreAnActionProposedBeforeTheCutIsNeverSentBlind(t *testing.T) {
	b := newHarness(t, breaker.Config{})
	ts := stewardtest.StartTool(t).Always(callPath, stewardtest.Answer{Work: true})
	b.register(ts, "put", true, nil)
	b.register(ts, "get", true, func(c *stewardv1.ToolContract) { c.EffectClass = stewardv1.EffectClass_EFFECT_CLASS_READ })
	b.plane.Stop()
	k := &stewardv1.TaskContract{TaskId: "t-cut", Intent: "test", AllowedTools: []string{"put", "get"}}
	b.Append(k.TaskId, &stewardv1.TaskCreated{Contract: k}, &stewardv1.TaskStarted{})
	sent, sentPermit := b.allow(k.TaskId, "p-sent", "put", "a")
	unsent, unsentPermit := b.allow(k.TaskId, "p-unsent", "put", "b")
	read, readPermit := b.allow(k.TaskId, "p-read", "get", "c")
	cutAt := b.Append(k.TaskId, sentPermit, unsentPermit).LastSequence
	oldSteward(t, ts, sent)

	b.cfg.RestoreCut = &backup.Cut{Sequence: cutAt, Time: time.Now()}
	b.start()
	fresh, freshPermit := b.allow(k.TaskId, "p-fresh", "put", "d")
	b.Append(k.TaskId, freshPermit, readPermit)

	for _, a := range []*stewardv1.Action{sent, unsent, fresh, read} {
		b.WaitAction(k.TaskId, a.ActionId, status(stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED))
	}
	for _, a := range []*stewardv1.Action{sent, unsent} {
		if why := restoreUnknown(t, b, k.TaskId, a.ActionId); !strings.Contains(why, "restored from a backup") {
			t.Errorf("action %s: no unknown outcome naming the restore, want one (reason %q)", a.ActionId, why)
		}
		if n := ts.CallsFor(a.OpKey); n != 1 {
			t.Errorf("action %s: the tool got %d calls for its key, want 1", a.ActionId, n)
		}
	}
	if got := b.WaitAction(k.TaskId, sent.ActionId, status(stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED)); got.SettledBy != execution.StatusQuerySettler {
		t.Errorf("the action sent after the cut was settled by %q, want the status query", got.SettledBy)
	}
	if got := b.WaitAction(k.TaskId, unsent.ActionId, status(stewardv1.ActionStatus_ACTION_STATUS_SUCCEEDED)); !got.Redispatched {
		t.Error("the action never sent was not sent once more after the tool said it never took it")
	}
	for _, a := range []*stewardv1.Action{fresh, read} {
		if why := restoreUnknown(t, b, k.TaskId, a.ActionId); why != "" || ts.CallsFor(a.OpKey) != 1 {
			t.Errorf("action %s: unknown %q and %d calls, want sent once at once", a.ActionId, why, ts.CallsFor(a.OpKey))
		}
	}
}

// oldSteward makes a's call as the Steward a backup was taken from would
// have after the backup: the restored log never hears of it.
func oldSteward(t *testing.T, ts *stewardtest.Tool, a *stewardv1.Action) {
	t.Helper()
	req, _ := http.NewRequestWithContext(context.Background(), http.MethodPost, ts.URL+callPath, strings.NewReader(`{"target":"a"}`))
	req.Header.Set("Idempotency-Key", a.OpKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
}

// restoreUnknown is the reason of the unknown outcome recorded for
// actionID, "" when there is none.
func restoreUnknown(t *testing.T, b *harness, taskID, actionID string) string {
	t.Helper()
	recs, err := b.Log.Read(context.Background(), taskID)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		if o := r.Event.GetActionOutcomeRecorded(); o.GetActionId() == actionID && o.GetOutcome().GetStatus() == stewardv1.ActionStatus_ACTION_STATUS_UNKNOWN {
			return o.GetOutcome().GetReason()
		}
	}
	return ""
}
