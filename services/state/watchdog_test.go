package state_test

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/steward-run/steward/pkg/event"
	"github.com/steward-run/steward/pkg/eventlog"
	stewardv1 "github.com/steward-run/steward/pkg/gen/steward/v1"
	"github.com/steward-run/steward/pkg/stewardtest"
	"github.com/steward-run/steward/pkg/taskstore"
	"github.com/steward-run/steward/services/state"
)

// quietAfter is the stall threshold the watchdog tests give their tasks.
const quietAfter = time.Second

func stallContract() *stewardv1.TaskContract {
	k := contract(0)
	k.Timers = &stewardv1.TaskTimers{StallAfter: durationpb.New(quietAfter)}
	return k
}

type step struct {
	name    string
	payload event.Payload
}

// actionUpTo returns the events that take action act-1 of a running task
// as far as the ledger step named upTo.
func actionUpTo(upTo string) []event.Payload {
	const id = "act-1"
	steps := []step{
		{"created", &stewardv1.TaskCreated{Contract: stallContract()}},
		{"started", &stewardv1.TaskStarted{}},
		{"proposed", &stewardv1.ActionProposed{Action: &stewardv1.Action{ActionId: id, ProposalId: "p1", Tool: "wire", ActionHash: "h", RequestHash: "r"}}},
	}
	run := runSteps(id)
	switch upTo {
	case "awaiting approval":
		steps = append(steps,
			step{"evaluated", &stewardv1.PolicyEvaluated{ActionId: id, Snapshot: &stewardv1.PolicySnapshot{SnapshotId: "s", Decision: stewardv1.PolicyDecision_POLICY_DECISION_REQUIRE_APPROVAL}}},
			step{upTo, &stewardv1.ApprovalRequested{Approval: &stewardv1.Approval{ApprovalId: "apv-1", ActionId: id, ActionHash: "h", RequestedAt: timestamppb.Now()}}})
	case "waiting to retry":
		steps = append(append(steps, run...),
			step{upTo, &stewardv1.ActionWaiting{ActionId: id, Kind: stewardv1.WaitKind_WAIT_KIND_RETRY, NextAttempt: 2, Until: timestamppb.New(time.Now().Add(time.Hour))}})
	case "overdue wait":
		steps = append(append(steps, run...),
			step{upTo, &stewardv1.ActionWaiting{ActionId: id, Kind: stewardv1.WaitKind_WAIT_KIND_RETRY, NextAttempt: 2, Until: timestamppb.Now()}})
	case "unknown":
		steps = append(append(steps, run...),
			step{upTo, &stewardv1.ActionOutcomeRecorded{ActionId: id, Outcome: &stewardv1.Outcome{Status: stewardv1.ActionStatus_ACTION_STATUS_UNKNOWN}}})
	default:
		steps = append(steps, run...)
	}
	var out []event.Payload
	for _, s := range steps {
		out = append(out, s.payload)
		if s.name == upTo {
			break
		}
	}
	return out
}

// runSteps are the ledger steps that take action id from proposed, allowed
// by policy, to its first dispatch.
func runSteps(id string) []step {
	return []step{
		{"evaluated", &stewardv1.PolicyEvaluated{ActionId: id, Snapshot: &stewardv1.PolicySnapshot{SnapshotId: "s", Decision: stewardv1.PolicyDecision_POLICY_DECISION_ALLOW}}},
		{"permitted", &stewardv1.ActionPermitted{Permit: &stewardv1.ActionPermit{PermitId: "pm-" + id, ActionId: id, ActionHash: "h", RequestHash: "r"}}},
		{"claimed", &stewardv1.ActionClaimed{ActionId: id, PermitId: "pm-" + id, Worker: "w1"}},
		{"dispatched", &stewardv1.ActionDispatched{ActionId: id, Attempt: 1, Worker: "w1"}},
	}
}

// beside returns the events of a task whose action act-1 awaits approval
// while a second action, act-2 (tool "mail"), is dispatched and, if wait
// is non-zero, then waits to retry until wait from now.
func beside(wait time.Duration) []event.Payload {
	const id = "act-2"
	out := actionUpTo("awaiting approval")
	out = append(out, &stewardv1.ActionProposed{Action: &stewardv1.Action{ActionId: id, ProposalId: "p2", Tool: "mail", ActionHash: "h", RequestHash: "r"}})
	for _, s := range runSteps(id) {
		out = append(out, s.payload)
	}
	if wait != 0 {
		out = append(out, &stewardv1.ActionWaiting{ActionId: id, Kind: stewardv1.WaitKind_WAIT_KIND_RETRY, NextAttempt: 2, Until: timestamppb.New(time.Now().Add(wait))})
	}
	return out
}

// lockedBuffer collects log output from several goroutines.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func startWatchdog(t *testing.T, log *eventlog.Log, out *lockedBuffer) *state.Plane {
	t.Helper()
	logger := slog.New(slog.NewTextHandler(out, &slog.HandlerOptions{Level: slog.LevelWarn}))
	p := state.New(log, logger, state.WithStallCheckEvery(100*time.Millisecond))
	if err := p.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Stop)
	return p
}

func countType(t *testing.T, log *eventlog.Log, taskID, typ string) (n int, last *stewardv1.Event) {
	t.Helper()
	recs, err := log.Read(context.Background(), taskID)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		if r.Event.Type == typ {
			n++
			last = r.Event
		}
	}
	return n, last
}

// waitMarks waits up to 10 s for each task in want to carry a stall mark.
func waitMarks(t *testing.T, log *eventlog.Log, want map[string]int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for id := range want {
		for {
			if n, _ := countType(t, log, id, event.TypeTaskStalled); n > 0 || time.Now().After(deadline) {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
}

// TestWatchdogMarksOnlyUndeclaredSilence leaves tasks quiet past their
// threshold: only the one whose action was dispatched with no heartbeat,
// the one with nothing in flight, the one whose retry timer came due with
// nothing happening, and the one with an action dispatched with no
// heartbeat beside another awaiting approval, are marked, and each once;
// tasks waiting on an approval (alone or beside a retry timer not yet
// due), a retry timer not yet due or the settling of an unknown outcome,
// and a paused task, are not.
func TestWatchdogMarksOnlyUndeclaredSilence(t *testing.T) {
	log, _ := stewardtest.OpenLog(t)
	ctx := context.Background()
	histories := map[string][]event.Payload{
		"dispatched":              actionUpTo("dispatched"),
		"idle":                    {&stewardv1.TaskCreated{Contract: stallContract()}, &stewardv1.TaskStarted{}},
		"awaiting-approval":       actionUpTo("awaiting approval"),
		"waiting-to-retry":        actionUpTo("waiting to retry"),
		"overdue-wait":            actionUpTo("overdue wait"),
		"unknown":                 actionUpTo("unknown"),
		"paused":                  {&stewardv1.TaskCreated{Contract: stallContract()}, &stewardv1.TaskStarted{}, &stewardv1.TaskPaused{}},
		"approval-and-dispatched": beside(0),
		"approval-and-waiting":    beside(time.Hour),
	}
	for id, h := range histories {
		if err := appendHistory(ctx, log, id, h...); err != nil {
			t.Fatalf("%s: %v", id, err)
		}
	}
	var out lockedBuffer
	p := startWatchdog(t, log, &out)
	// Long enough for a wrong mark to show; then, on a slow machine, wait for
	// the right ones and for the views to hold them.
	time.Sleep(quietAfter + 1500*time.Millisecond)
	want := map[string]int{"dispatched": 1, "idle": 1, "overdue-wait": 1, "approval-and-dispatched": 1}
	waitMarks(t, log, want)
	if err := eventlog.CatchUp(ctx, p.Views(), log.LastTaskSequence); err != nil {
		t.Fatal(err)
	}

	for id := range histories {
		n, ev := countType(t, log, id, event.TypeTaskStalled)
		if n != want[id] {
			t.Errorf("%s: %d stall marks, want %d", id, n, want[id])
			continue
		}
		if n == 0 {
			continue
		}
		if ev.Actor.GetPlane() != state.PlaneName {
			t.Errorf("%s: stall mark by %v, want the state plane", id, ev.Actor)
		}
		view, err := p.Views().Get(id)
		if err != nil {
			t.Fatal(err)
		}
		if view.StalledSince == nil || view.StalledReason != ev.GetTaskStalled().Reason {
			t.Errorf("%s: view stalled since %v (%q), want the mark", id, view.StalledSince, view.StalledReason)
		}
	}
	_, ev := countType(t, log, "dispatched", event.TypeTaskStalled)
	t.Logf("reason: %s", ev.GetTaskStalled().GetReason())
	if r := ev.GetTaskStalled().GetReason(); !strings.Contains(r, "action act-1 (wire) was dispatched at") || !strings.Contains(r, "with no heartbeat") {
		t.Errorf("reason %q does not say what the task was doing", r)
	}
	// The stuck action leads, not the one awaiting approval before it.
	_, ev = countType(t, log, "approval-and-dispatched", event.TypeTaskStalled)
	if r := ev.GetTaskStalled().GetReason(); !strings.Contains(r, "action act-2 (mail) was dispatched at") || !strings.Contains(r, "with no heartbeat") ||
		!strings.Contains(r, "(and 1 more actions are open)") {
		t.Errorf("reason %q does not name the dispatched action", r)
	}
	if logged := out.String(); strings.Count(logged, "task stalled") != 4 || !strings.Contains(logged, "level=WARN") {
		t.Errorf("want four warnings, logged:\n%s", logged)
	}
}

// TestNewEventClearsStallMark marks a task stalled, then records a
// heartbeat: the mark is gone from the view at once, and a new quiet
// spell makes a new mark.
func TestNewEventClearsStallMark(t *testing.T) {
	log, _ := stewardtest.OpenLog(t)
	ctx := context.Background()
	if err := appendHistory(ctx, log, "t1", actionUpTo("dispatched")...); err != nil {
		t.Fatal(err)
	}
	var out lockedBuffer
	p := startWatchdog(t, log, &out)
	waitView(t, p, "t1", func(v *stewardv1.Task) bool { return v.StalledSince != nil })

	tk, err := taskstore.Update(ctx, log, "t1", func(*stewardv1.Task) (*stewardv1.Event, error) {
		return event.New(event.Meta{TaskID: "t1"}, &stewardv1.ActionHeartbeat{ActionId: "act-1", Attempt: 1, Beat: 1})
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Views().WaitFor(ctx, tk.LastSequence); err != nil {
		t.Fatal(err)
	}
	if v, _ := p.Views().Get("t1"); v.StalledSince != nil || v.StalledReason != "" {
		t.Fatalf("after a heartbeat the view is still stalled: %v %q", v.StalledSince, v.StalledReason)
	}

	v := waitView(t, p, "t1", func(v *stewardv1.Task) bool { return v.StalledSince != nil })
	if !v.StalledSince.AsTime().Equal(tk.UpdatedAt.AsTime()) {
		t.Errorf("quiet since %v, want the heartbeat's time %v", v.StalledSince.AsTime(), tk.UpdatedAt.AsTime())
	}
	if !strings.Contains(v.StalledReason, "last heartbeat at") {
		t.Errorf("reason %q does not name the heartbeat", v.StalledReason)
	}
	if n, _ := countType(t, log, "t1", event.TypeTaskStalled); n != 2 {
		t.Errorf("%d stall marks, want 2: one per quiet spell", n)
	}
}

func waitView(t *testing.T, p *state.Plane, id string, ok func(*stewardv1.Task) bool) *stewardv1.Task {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if v, err := p.Views().Get(id); err == nil && ok(v) {
			return v
		}
		time.Sleep(20 * time.Millisecond)
	}
	v, err := p.Views().Get(id)
	t.Fatalf("task %s never reached the wanted view: %v %v", id, v, err)
	return nil
}
