package state_test

import (
	"strings"
	"testing"
	"time"

	"github.com/steward-run/steward/pkg/event"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/stewardtest"
	"github.com/steward-run/steward/services/state"
)

// withDefaultTimers is history with its task created under a contract that
// sets no timers: the default stall threshold (15 min) and the re-drive
// bound.
func withDefaultTimers(history []event.Payload) []event.Payload {
	history[0] = &stewardv1.TaskCreated{Contract: contract(0)}
	return history
}

// TestRedriveBoundMarksWhatShouldMoveByItself leaves tasks quiet for just
// over the re-drive bound (and far under the stall threshold): the one
// still pending and the ones whose action waits on a plane's next step
// alone (proposed, permitted, claimed) are marked, each once, saying what
// is stuck; the one waiting on a person's approval, the one whose call is
// out (dispatched, whose heartbeats the long threshold judges) and the one
// with nothing in flight (its agent's next proposal) are not.
func TestRedriveBoundMarksWhatShouldMoveByItself(t *testing.T) {
	env := stewardtest.NewEnv(t)
	histories := []struct {
		id      string
		history []event.Payload
		says    string // what the mark's reason says, if marked
	}{
		{"proposed", withDefaultTimers(actionUpTo("proposed")), "was proposed at"},
		{"permitted", withDefaultTimers(actionUpTo("permitted")), "was permitted at"},
		{"claimed", withDefaultTimers(actionUpTo("claimed")), "was claimed by w1 at"},
		{"awaiting-approval", withDefaultTimers(actionUpTo("awaiting approval")), ""},
		{"dispatched", withDefaultTimers(actionUpTo("dispatched")), ""},
		{"idle", []event.Payload{&stewardv1.TaskCreated{Contract: contract(0)}, &stewardv1.TaskStarted{}}, ""},
		// Created last, so looked at last.
		{"pending", []event.Payload{&stewardv1.TaskCreated{Contract: contract(0)}}, "not started"},
	}
	var last time.Time
	for _, h := range histories {
		last = env.Append(h.id, h.history...).UpdatedAt.AsTime()
	}
	clk := &stewardtest.Clock{}
	clk.Set(last.Add(state.DefaultRedriveAfter - time.Second))
	var out stewardtest.LogBuffer
	p := startWatchdog(t, env, clk, &out)
	// Under the bound the watchdog looks and marks nothing: every mark
	// below says the task was quiet for the bound, not a second less.
	looked := p.Looks()
	stewardtest.Eventually(t, 10*time.Second, func() (bool, string) {
		return p.Looks() >= looked+2, "the watchdog does not look"
	})
	clk.Set(last.Add(state.DefaultRedriveAfter))
	stewardtest.Eventually(t, 10*time.Second, func() (bool, string) {
		return env.Count("pending", event.TypeTaskStalled) > 0, "pending is not marked stalled"
	})
	for _, h := range histories {
		n := env.Count(h.id, event.TypeTaskStalled)
		switch {
		case h.says == "" && n != 0:
			t.Errorf("%s: %d stall marks within the stall threshold, want none: %s", h.id, n, lastMark(t, env, h.id).GetReason())
		case h.says != "" && n != 1:
			t.Errorf("%s: %d stall marks, want 1", h.id, n)
		case h.says != "" && !strings.HasPrefix(lastMark(t, env, h.id).GetReason(), "no progress for 30s;"):
			t.Errorf("%s: reason %q: want it marked at the bound", h.id, lastMark(t, env, h.id).GetReason())
		case h.says != "" && !strings.Contains(lastMark(t, env, h.id).GetReason(), h.says):
			t.Errorf("%s: reason %q does not say %q", h.id, lastMark(t, env, h.id).GetReason(), h.says)
		}
	}
}
